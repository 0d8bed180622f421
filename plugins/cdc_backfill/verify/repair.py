"""The repair: one execute-snapshot signal whose additional-condition selects the ranges that differ (pure).

The condition goes through the same checks as an operator's (``SignalStore.send``), and the snapshot
engine reads the whole key space filtered by it: rows of the differing ranges land as READ events, and
the next reconcile puts them in the state at their windows' positions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.signals.model import DATA_MAX, Signal, execute_snapshot, new_signal_id
from cdc_backfill.verify.ranges import KeyRange, runs
from cdc_backfill.verify.sql import range_predicate

if TYPE_CHECKING:
    from cdc_backfill.verify.source_side import SourceSide


@dataclass(frozen=True)
class Repair:
    signal: Signal
    condition: str | None
    scope: str  # "ranges": exactly the differing ranges; "span": first to last of them; "table": all

    def to_dict(self) -> dict[str, object]:
        return {"signal_id": self.signal.id, "condition": self.condition, "scope": self.scope}


def collection_pattern(collection: str) -> str:
    """The regex that matches exactly ``collection`` (data-collections are whole-name regexes)."""
    return re.escape(collection)


def repair_signal(
    collection: str,
    key: Sequence[PgColumn],
    ranges: Sequence[KeyRange],
    differing: Sequence[int],
    signal_id: str | None = None,
) -> Repair:
    """One execute-snapshot of ``collection`` whose additional-condition selects the differing ranges.

    Adjacent differing ranges are merged into one predicate. When the condition would not fit the signal
    table's data column, it widens to one span from the first to the last differing range, then to the
    whole table: reading more than needed is harmless, reading less would not repair.
    """
    if not differing:
        raise ValueError("nothing differs: there is nothing to repair")
    by_index = {r.index: r for r in ranges}
    sid = signal_id or new_signal_id()
    spans = runs(differing)
    first, last = by_index[spans[0][0]], by_index[spans[-1][1]]
    candidates: list[tuple[str | None, str]] = []
    parts = [range_predicate(key, by_index[a].lo, by_index[b].hi) for a, b in spans]
    if all(p is not None for p in parts):
        joined = parts[0] if len(parts) == 1 else " OR ".join(f"({p})" for p in parts)
        candidates.append((joined, "ranges"))
    span = range_predicate(key, first.lo, last.hi)
    if span is not None:
        candidates.append((span, "span"))
    candidates.append((None, "table"))  # every range differs, or nothing narrower fits
    for condition, scope in candidates:
        signal = execute_snapshot(sid, (collection_pattern(collection),), condition=condition)
        data = signal.data_json() or ""
        if len(data) <= DATA_MAX:
            return Repair(signal, condition, scope)
    raise AssertionError("a signal without a condition always fits")  # pragma: no cover


def send_repair(
    url: str, signal_table: str | None, collection: str, source: SourceSide, differing: Sequence[int]
) -> tuple[Repair, str]:
    """Send the repair signal of the differing ranges to the signal table; (the repair, the signal
    table's name). Raises SignalError when the signal is refused (nothing is written then)."""
    from cdc_backfill.signals.store import SignalStore

    repair = repair_signal(collection, source.table.key, source.ranges, differing)
    store = SignalStore(url, signal_table)
    try:
        store.send(repair.signal)
    finally:
        store.sa_engine.dispose()
    return repair, store.signal_table
