"""A run's windows and snapshot marks from the signal collection's rows (docs/design.md §6, pure).

The signal rows a run needs are few (two per chunk, and a start and a done row per snapshot), so the
reconcile collects them in one Spark job (``reconcile.spark.merge.signal_rows``) and finds the windows
here, rather than in a Spark plan whose every shuffle is a job of its own.

A row is ``(id, op, position, data, type)``: ``position`` the binary position key, which compares byte
by byte as Python's bytes do.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from cdc_backfill.events.positions import position_of_key
from cdc_backfill.reconcile.debezium_snapshots import start_marks
from cdc_backfill.signals.marks import DONE_SUFFIX, ENDED_SUFFIX, START_SUFFIX, Mark, mark_of
from cdc_backfill.signals.model import CLOSE_SUFFIX, EXECUTE, OPEN_SUFFIX, chunk_of

# the signal rows a run collects: watermarks, marks and (for Debezium) execute-snapshot rows
SUFFIXES = (OPEN_SUFFIX, CLOSE_SUFFIX, START_SUFFIX, DONE_SUFFIX, ENDED_SUFFIX)


class SignalRow(NamedTuple):
    id: str | None
    op: str
    position: bytes
    data: str | None
    type: str | None


class Window(NamedTuple):
    """A chunk's window: ``high`` is None while it is open. ``collection`` and ``snapshot`` come from the
    open row's data (this engine's rows name them; Debezium's do not)."""

    chunk_id: str
    collection: str | None
    snapshot: str | None
    low: bytes
    high: bytes | None


def find_windows(rows: Iterable[SignalRow]) -> list[Window]:
    """Every window opened among the rows, by low position. An insert of ``<chunk>-open`` gives the low
    (the least, if written twice); the high is the first close after it: an insert of ``<chunk>-close``,
    or the delete of the open row (Debezium's insert_delete watermarking). A chunk whose every close
    is before its open has no window."""
    opens: dict[str, list[Any]] = {}  # chunk -> [low, collection, snapshot]
    closes: dict[str, list[bytes]] = {}
    for r in rows:
        rid, at = r.id or "", bytes(r.position)
        if r.op in ("c", "r") and rid.endswith(OPEN_SUFFIX):
            found = opens.setdefault(chunk_of(rid), [at, None, None])
            found[0] = min(found[0], at)
            found[1] = _greater(found[1], data_field(r.data, "data-collection"))
            found[2] = _greater(found[2], data_field(r.data, "signal"))
        if (r.op in ("c", "r") and rid.endswith(CLOSE_SUFFIX)) or (r.op == "d" and rid.endswith(OPEN_SUFFIX)):
            closes.setdefault(chunk_of(rid), []).append(at)
    out = []
    for chunk, (low, collection, snapshot) in opens.items():
        ends = closes.get(chunk)
        after = [c for c in ends or () if c > low]
        if ends and not after:
            continue
        out.append(Window(chunk, collection, snapshot, low, min(after) if after else None))
    return sorted(out, key=lambda w: (w.low, w.chunk_id))


def closed_chunks(window_rows: Sequence[Window]) -> set[str]:
    """The chunk ids of the windows whose high watermark is in the stream: their READ rows are judged."""
    return {w.chunk_id for w in window_rows if w.high is not None}


def run_marks(rows: Sequence[SignalRow], collection: str, executes: bool = False) -> list[Mark]:
    """The start, done and ended rows naming ``collection`` as marks; ``executes``: also a Debezium
    snapshot's start for each execute-snapshot row naming it. A row whose data does not parse is none."""
    out = []
    for r in rows:
        rid = r.id or ""
        if r.op not in ("c", "r") or not rid.endswith((START_SUFFIX, DONE_SUFFIX, ENDED_SUFFIX)):
            continue
        try:
            data = json.loads(r.data or "{}")
        except ValueError:
            continue
        if not isinstance(data, dict) or data.get("data-collection") != collection:
            continue
        mark = mark_of(rid, data, position_of_key(bytes(r.position)))
        if mark is not None:
            out.append(mark)
    if executes:
        out += start_marks(
            [(r.id or "", EXECUTE, r.data, position_of_key(bytes(r.position)))
             for r in rows if r.op in ("c", "r") and r.type == EXECUTE],
            collection,
        )  # fmt: skip
    return out


def data_field(data: str | None, name: str) -> str | None:
    """A top-level field of a signal row's JSON data as text, as Spark's ``get_json_object`` gives it:
    a string as itself, another value as its JSON; None when the data is not a JSON object or has no such
    field (or it is null)."""
    try:
        doc = json.loads(data) if data is not None else None
    except ValueError:
        return None
    value = doc.get(name) if isinstance(doc, dict) else None
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"))


def _greater(a: str | None, b: str | None) -> str | None:
    """The greater of two texts, None aside (as Spark's ``max`` ignores nulls)."""
    if a is None or b is None:
        return a if b is None else b
    return max(a, b)
