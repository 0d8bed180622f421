"""The signal rows a run's windows and marks come from (``reconcile.windows``), read on the driver with
Arrow: the signal collection's log files after the state's position and the signal rows the previous run
carried. They are a few rows per chunk; collected through Spark they were a job of their own (0.15-0.2 s
of a warm 1M-event reconcile, more in a small run on a cold JVM). ``reconcile.spark.merge.signal_rows``
selects the same rows from frames."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cdc_backfill.eventlog.schema import OP, POSITION
from cdc_backfill.lakepath import LakePath, lake_path, read_parquet
from cdc_backfill.landing.layout import CARRY_ROWS, CARRY_SIGNALS
from cdc_backfill.reconcile.windows import SUFFIXES, SignalRow
from cdc_backfill.signals.model import EXECUTE
from cdc_backfill.state.table import StateError

WANTED_OPS = ("c", "r", "d")  # inserts, snapshot reads and deletes of signal rows: windows' ends, marks


def wanted(op: str | None, rid: str | None, kind: str | None) -> bool:
    """A signal row the windows or the marks may use: a watermark or a mark by its id's suffix, or an
    execute-snapshot signal (a Debezium snapshot's start)."""
    return op in WANTED_OPS and ((rid is not None and rid.endswith(SUFFIXES)) or kind == EXECUTE)


def carried_signal_files(carry: LakePath | str | None) -> list[LakePath]:
    """The files of the signal rows a previous run carried ([] for none). StateError for a carry without
    its log rows (of a release before the typed log), which this release does not read."""
    if carry is None:
        return []
    carry = lake_path(carry)
    if not (carry / CARRY_ROWS).is_dir():
        raise StateError(
            f"{carry} is a carry of a release before the typed log, which this release does not read: "
            "reconcile into a new --state folder"
        )
    return sorted(p for p in (carry / CARRY_SIGNALS).glob("*.parquet") if not p.name.startswith(("_", ".")))


def landed_signal_rows(
    files: Sequence[LakePath], carried: Sequence[LakePath], after: bytes | None
) -> list[SignalRow]:
    """The :func:`wanted` rows of the signal collection's log ``files`` after the position key ``after``
    (None: all), and of the ``carried`` files (all of them: the previous run kept them for this one), by
    position."""
    newer = [
        r for f in files for r in file_rows(f) if after is None or r.position is None or r.position > after
    ]
    rows = [*newer, *(r for f in carried for r in file_rows(f))]
    kept = [r for r in rows if r.position is not None and wanted(r.op, r.id, r.type)]
    return sorted(kept, key=lambda r: r.position)


def file_rows(path: LakePath) -> list[SignalRow]:
    """A signal log file's rows (a schema version may lack a column: null there), as text."""
    import pyarrow as pa

    table = read_parquet(path)

    def column(name: str, kind: Any) -> list[Any]:
        if name not in table.column_names:
            return [None] * table.num_rows
        return table.column(name).cast(kind).to_pylist()

    ids, ops, kinds, data = (column(n, pa.string()) for n in ("id", OP, "type", "data"))
    positions = column(POSITION, pa.binary())
    return [SignalRow(*r) for r in zip(ids, ops, positions, data, kinds, strict=True)]
