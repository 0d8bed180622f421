"""The phantom rule (docs/design.md §6 rule 7) for the snapshots Debezium runs: their start, done and
ended marks, taken from the stream's signal rows and from Debezium's notifications (pure).

Why these marks are exact (Debezium 3.6's incremental snapshot, ``debezium-connector-common``):

- Debezium acts on an execute-snapshot signal only once it reads the signal row's INSERT from the
  stream, and queries a table's largest key after that (after its first window opened, even). Every
  row committed before the signal row is therefore visible to that query: a row of the state whose
  last event comes before the signal row, and that Debezium neither read nor saw change, was gone
  from the table. The signal row's own position is the snapshot's P0.
- A table read to its end gets TABLE_SCAN_COMPLETED with status SUCCEEDED (EMPTY: there was nothing to
  read). A stopped table gets none: Debezium sends COMPLETED under the signal's id and then ABORTED
  under an id of its own, so COMPLETED alone proves nothing.
- The notification counts only once the stream landed before it is in the state: ``capture debezium``
  records with each notification the batch file it had landed last (``landed_in``); the run planner
  marks a notification ``applied`` when an ingest manifest names that file, and every manifest is
  applied by the run that lists it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from cdc_backfill.names import split_collection
from cdc_backfill.signals.marks import K_CHUNKS, K_CONDITION, K_DIALECT, K_STATUS, Mark
from cdc_backfill.signals.model import EXECUTE, Signal, SignalError

FINISHED = ("SUCCEEDED", "EMPTY")  # TABLE_SCAN_COMPLETED statuses of a table read to its end


def start_marks(rows: Iterable[tuple[str, str, str | None, tuple[int, ...]]], collection: str) -> list[Mark]:
    """Start marks from the signal collection's rows ``(id, type, data, position)``: one per
    execute-snapshot signal whose collections name ``collection``, carrying the condition it reads
    that collection with. A row that does not parse as a signal is no start."""
    out = []
    for row_id, kind, data, position in rows:
        if kind != EXECUTE:
            continue
        try:
            sig = Signal.from_row(row_id, kind, data)
        except SignalError:
            continue
        if not any(_names(pattern, collection) for pattern in sig.collections):
            continue
        condition = _condition(sig, collection)
        extra: dict[str, Any] = {K_CONDITION: condition} if condition is not None else {}
        out.append(Mark("start", row_id, position, {**extra, K_DIALECT: "postgresql"}))
    return out


def notification_marks(
    notes: Sequence[dict[str, Any]], collection: str, reached: tuple[int, ...] | None
) -> list[Mark]:
    """Done marks (a finished table scan of ``collection``) and ended marks (an aborted snapshot) from
    Debezium's notifications: only those marked ``applied`` (the stream landed with them is in the
    log this run applies), placed at ``reached``, the position the run's state has reached."""
    from cdc_backfill.landing.notifications import snapshot_outcomes

    if reached is None:
        return []
    counted = [n for n in notes if n.get("applied")]
    out = []
    for note in counted:
        data = note.get("additional_data") or {}
        if (
            note.get("type") == "TABLE_SCAN_COMPLETED"
            and data.get("status") in FINISHED
            and same_table(str(data.get("scanned_collection", "")), collection)
        ):
            out.append(Mark("done", str(note.get("id")), reached, {K_CHUNKS: 0}))
    for sid, outcome in sorted(snapshot_outcomes(counted).items()):
        if outcome == "ABORTED":
            out.append(Mark("ended", sid, reached, {K_STATUS: "stopped"}))
    return out


def unfinished(notes: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The snapshots Debezium said STARTED and has not said ended in ``notes``, each with what the
    run waits for and what to do when its connector was lost (pure: the run summary's words)."""
    from cdc_backfill.landing.notifications import snapshot_outcomes

    ended = snapshot_outcomes(notes)
    started = dict.fromkeys(str(n.get("id")) for n in notes if n.get("type") == "STARTED")
    return {
        sid: "waiting: Debezium said STARTED and no end of it is in the stream read so far (if its "
        "connector was lost mid-snapshot, send a new execute-snapshot of its collections)"
        for sid in started
        if sid not in ended
    }


def same_table(debezium_name: str, collection: str) -> bool:
    """Whether Debezium's name of a table (``schema.table``, parts unquoted) is ``collection``."""
    schema, table = split_collection(collection)
    return debezium_name in (collection, f"{schema}.{table}" if schema else table)


def _names(pattern: str, collection: str) -> bool:
    import re

    try:
        return re.fullmatch(pattern, collection) is not None
    except re.error:
        return False


def _condition(sig: Signal, collection: str) -> str | None:
    """The condition ``sig`` reads ``collection`` with: its per-collection one, else its single one."""
    for cond in sig.conditions:
        if _names(cond.collection, collection):
            return cond.filter
    return sig.condition
