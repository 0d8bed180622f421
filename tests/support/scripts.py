"""Hand-made histories of one table in every input format, with the truth they must reconcile to.

A :class:`Script` plays a source table: seed rows (there before the stream starts, so only READs know
them), inserts, updates (whole or TOAST-only), deletes, key changes, truncates, and snapshot windows
(open, READ of some keys, close by insert or by delete). Each change gets the next position; an
:class:`Encoder` writes it as the records of one format (Debezium PostgreSQL as this project's capture
writes it, SQL Server, Oracle, MySQL, DataWorks), so the same history tests every parser and the
reconcile behind it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

TOAST = "__debezium_unavailable_value"
COLUMNS = [{"name": "id", "type": "integer", "type_oid": 23}, {"name": "v", "type": "text", "type_oid": 25},
           {"name": "big", "type": "text", "type_oid": 25}]  # fmt: skip


SIGNAL_KINDS = ("open", "close", "close-by-delete", "start", "done")


@dataclass
class Change:
    kind: str  # c u d t (row changes), open, close, close-by-delete, start, done (signal rows)
    key: int | str | None
    row: dict[str, Any] | None = None
    before: dict[str, Any] | None = None
    toast: tuple[str, ...] = ()
    n: int = 0  # position: 1, 2, 3, ...


@dataclass
class Script:
    """A source table and the changes made to it, in commit order."""

    truth: dict[int, dict[str, Any]] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    reads: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # chunk -> READ rows

    def _emit(self, change: Change) -> None:
        change.n = len(self.changes) + 1
        self.changes.append(change)

    def seed(self, *keys: int) -> None:
        for k in keys:
            self.truth[k] = {"id": k, "v": f"seed{k}", "big": f"BIG{k}"}

    def insert(self, k: int, v: str) -> None:
        self.truth[k] = {"id": k, "v": v, "big": f"B-{v}"}
        self._emit(Change("c", k, dict(self.truth[k])))

    def update(self, k: int, v: str, toast: bool = False) -> None:
        before = dict(self.truth[k])
        self.truth[k]["v"] = v
        if not toast:
            self.truth[k]["big"] = f"B-{v}"
        row = dict(self.truth[k])
        if toast:
            row["big"] = TOAST  # the stream does not carry an unchanged TOAST value
        self._emit(Change("u", k, row, before, ("big",) if toast else ()))

    def delete(self, k: int) -> None:
        before = self.truth.pop(k)
        self._emit(Change("d", k, None, before))

    def change_key(self, old: int, new: int) -> None:
        """As the sources emit a key change: the old key's delete, then the new key's insert."""
        row = self.truth.pop(old)
        self._emit(Change("d", old, None, dict(row)))
        self.truth[new] = {**row, "id": new}
        self._emit(Change("c", new, dict(self.truth[new]), dict(row)))

    def truncate(self) -> None:
        self.truth.clear()
        self._emit(Change("t", None))

    def lose_delete(self, k: int) -> None:
        """A delete the stream never carried (the table was out of the capture, a topic was lost)."""
        self.truth.pop(k)

    def lose_insert(self, k: int, v: str) -> None:
        self.truth[k] = {"id": k, "v": v, "big": f"B-{v}"}

    def debezium_read(self, k: int) -> None:
        """A READ event Debezium's own incremental snapshot puts in the stream (op ``r``)."""
        self._emit(Change("r", k, dict(self.truth[k])))

    def start(self, snapshot: str) -> None:
        """The engine's start row of a snapshot (its P0), before it fixes the largest key."""
        self._emit(Change("start", snapshot))

    def done(self, snapshot: str, chunks: int, condition: str | None = None) -> None:
        """The engine's done row: every one of the snapshot's ``chunks`` chunk files has landed."""
        extra: dict[str, Any] = {"chunks": chunks, "dialect": "postgresql"}
        if condition is not None:
            extra["additional-condition"] = condition
        self._emit(Change("done", snapshot, extra))

    def open(self, chunk: str, snapshot: str | None = None) -> None:
        self._emit(Change("open", chunk, {"signal": snapshot} if snapshot else None))

    def read(self, chunk: str, *keys: int) -> None:
        self.reads.setdefault(chunk, []).extend(dict(self.truth[k]) for k in keys if k in self.truth)

    def close(self, chunk: str, by_delete: bool = False) -> None:
        self._emit(Change("close-by-delete" if by_delete else "close", chunk))


# ------------------------------------------------------------------------------------------ formats


@dataclass(frozen=True)
class Encoder:
    name: str
    collection: str
    signal: str
    encode: Callable[[Change, str, str], list[dict[str, Any] | None]]
    truncate: bool = True
    toast: bool = True


def _signal_row(change: Change, collection: str) -> dict[str, Any]:
    if change.kind in ("start", "done"):
        data = {"data-collection": collection, "signal": change.key, **(change.row or {})}
        kind = f"snapshot-collection-{change.kind}"
        return {"id": f"{change.key}-{change.kind}", "type": kind, "data": json.dumps(data)}
    kind = "snapshot-window-open" if change.kind == "open" else "snapshot-window-close"
    suffix = "open" if change.kind in ("open", "close-by-delete") else "close"
    data = json.dumps({"data-collection": collection, **(change.row or {})})
    return {"id": f"{change.key}-{suffix}", "type": kind, "data": data}


def _debezium(source: Callable[[int], dict[str, Any]], tombstones: bool = True) -> Callable[..., list]:
    def encode(change: Change, table: str, collection: str) -> list[dict[str, Any] | None]:
        schema, name = table.split(".")
        src = {**source(change.n), "schema": schema, "table": name, "db": schema}
        if change.kind == "t":
            return [{"key": None, "value": {"before": None, "after": None, "source": src, "op": "t"}}]
        if change.kind in ("open", "close", "start", "done"):
            row = _signal_row(change, collection)
            return [
                {"key": {"id": row["id"]}, "value": {"before": None, "after": row, "source": src, "op": "c"}}
            ]
        if change.kind == "close-by-delete":
            row = _signal_row(change, collection)
            value = {"before": row, "after": None, "source": src, "op": "d"}
            return [{"key": {"id": row["id"]}, "value": value}]
        value = {"before": change.before, "after": change.row, "source": src, "op": change.kind}
        out: list[dict[str, Any] | None] = [{"key": {"id": change.key}, "value": value}]
        if change.kind == "d" and tombstones:
            out.append({"key": {"id": change.key}, "value": None})  # log compaction's marker: skipped
        return out

    return encode


def _dataworks(change: Change, table: str, collection: str) -> list[dict[str, Any] | None]:
    db, name = table.split(".")
    seq = str(change.n * 1_000_000)
    if change.kind in SIGNAL_KINDS:
        row = _signal_row(change, collection)
        cols = [
            {"name": "id", "type": "STRING"},
            {"name": "type", "type": "STRING"},
            {"name": "data", "type": "STRING"},
        ]
        op, before, after = (
            ("DELETE", row, None) if change.kind == "close-by-delete" else ("INSERT", None, row)
        )
    else:
        cols = [
            {"name": "id", "type": "LONG"},
            {"name": "v", "type": "STRING"},
            {"name": "big", "type": "STRING"},
        ]
        before, after = change.before, change.row
        op = {"c": "INSERT", "d": "DELETE", "u": "UPDATE_AFTER", "t": "TRUNCATE"}[change.kind]
    schema = {
        "dataColumn": cols,
        "primaryKey": "id",
        "source": {"dbType": "MySQL", "dbName": db, "tableName": name},
    }
    wrap = lambda r: None if r is None else {"dataColumn": r}  # noqa: E731
    payload = {"before": wrap(before), "after": wrap(after), "sequenceId": seq, "op": op,
               "timestamp": {"eventTime": 1_700_000_000_000 + change.n}}  # fmt: skip
    return [{"schema": schema, "payload": payload}]


def _hex(n: int) -> str:
    return f"00000027:{n:08X}:0003"


ENCODERS = {
    "debezium-postgresql": Encoder(
        "debezium-postgresql", "s.t", "s.cdc_signal",
        _debezium(lambda n: {"connector": "postgresql", "commit_lsn": n * 64, "lsn": n * 64}),
    ),
    "debezium-sqlserver": Encoder(
        "debezium-sqlserver", "dbo.t", "dbo.cdc_signal",
        _debezium(lambda n: {"connector": "sqlserver", "change_lsn": _hex(n), "commit_lsn": _hex(n), "event_serial_no": "1"}),
        truncate=False, toast=False,  # SQL Server CDC captures no TRUNCATE; no TOAST placeholders
    ),
    "debezium-oracle": Encoder(
        "debezium-oracle", "APP.T", "APP.CDC_SIGNAL",
        _debezium(lambda n: {"connector": "oracle", "scn": str(1000 + n * 7), "commit_scn": str(1000 + n * 7)}),
    ),
    "debezium-mysql": Encoder(
        "debezium-mysql", "app.t", "app.cdc_signal",
        _debezium(lambda n: {"connector": "mysql", "file": "mysql-bin.000003", "pos": 4 + n * 100, "row": 0}),
        toast=False,
    ),
    "dataworks": Encoder("dataworks", "app.t", "app.cdc_signal", _dataworks, toast=False),
}  # fmt: skip


def records(script: Script, enc: Encoder) -> list[tuple[int, dict[str, Any] | None]]:
    """(position, record) of every change, in commit order."""
    out = []
    for ch in script.changes:
        table = enc.signal if ch.kind in SIGNAL_KINDS else enc.collection
        out += [(ch.n, r) for r in enc.encode(ch, table, enc.collection)]
    return out


def write_stream_file(landing: Path, name: str, recs: list[dict[str, Any] | None]) -> Path:
    folder = landing / "stream"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def write_chunk(landing: Path, collection: str, chunk: str, rows: list[dict[str, Any]]) -> Path:
    """A READ chunk as the snapshot engine lands it (typed columns, metadata naming key and columns)."""
    folder = landing / "snapshots" / collection
    folder.mkdir(parents=True, exist_ok=True)
    n = len(rows)
    table = pa.table(
        {
            "id": pa.array([r["id"] for r in rows], pa.int32()),
            "v": pa.array([r["v"] for r in rows], pa.string()),
            "big": pa.array([r["big"] for r in rows], pa.string()),
            "_cdc_op": pa.array(["r"] * n, pa.string()),
            "_cdc_collection": pa.array([collection] * n, pa.string()),
            "_cdc_chunk_id": pa.array([chunk] * n, pa.string()),
        }
    )
    meta = {b"cdc.key": json.dumps(["id"]).encode(), b"cdc.chunk_key": json.dumps(["id"]).encode(),
            b"cdc.columns": json.dumps(COLUMNS).encode()}  # fmt: skip
    table = table.replace_schema_metadata(meta)
    path = folder / f"{chunk}.parquet"
    pq.write_table(table, path)
    return path


def every_rule(enc: Encoder) -> Script:
    """One history that exercises the rules of docs/design.md §6 (truncates aside, see :func:`truncates`),
    each on keys of its own."""
    s = Script()
    s.seed(1, 10, 11, 12, 13, 14, 16, 17, 18, 40)
    s.update(13, "before-a")  # before window a: the READ (taken later) is kept and wins
    s.open("a")
    s.update(10, "in-a")  # inside a: the READ of 10 is dropped
    if enc.toast:
        s.update(11, "toast-in-a", toast=True)  # dropped READ supplies the unchanged column
    s.read("a", 1, 10, 11, 12, 13, 14, 16, 17, 18)
    s.change_key(16, 36)  # key change inside a: the READ of 16 is dropped, 36 comes from the stream
    s.delete(18)  # deleted inside a: its READ is dropped
    s.close("a")
    s.update(14, "after-a")  # after a: the stream wins over the READ
    if enc.toast:
        s.update(12, "toast-after-a", toast=True)  # fills the unchanged column from the kept READ
    s.delete(17)  # after a: the delete wins over the READ
    s.insert(30, "new")
    s.change_key(30, 31)
    s.open("c")
    s.read("c", 40)
    s.close("c", by_delete=True)  # insert/delete watermarking: the close is the open row's delete
    s.open("empty")
    s.reads["empty"] = []  # a chunk that read no rows still closes its window
    s.close("empty")
    s.update(1, "last")
    return s


def truncates(enc: Encoder) -> Script:
    """A READ kept and then truncated away; READs dropped by a truncate inside their window; rows
    inserted after a truncate."""
    s = Script()
    s.seed(1, 2, 3)
    s.open("t0")
    s.read("t0", 2)
    s.close("t0")  # its READ is kept, then the truncate removes it
    s.open("t1")
    s.read("t1", 1, 3)
    s.truncate()  # inside t1: both READs dropped
    s.close("t1")
    s.insert(1, "after-truncate")
    s.insert(5, "after-truncate")
    s.open("t2")
    s.read("t2", 1, 5)
    s.update(5, "in-t2")  # dropped
    s.close("t2")
    return s


def phantoms(enc: Encoder, finished: bool = True, condition: str | None = None) -> Script:
    """Rows deleted while the stream was lost, then a whole snapshot (two chunks) with a start and a
    done row: the rows it did not read and nothing touched after its start are phantoms. Rows changed
    after the start (even in a chunk's range already read) stay."""
    s = Script()
    s.seed(1, 2, 3, 4, 5, 6)
    s.open("old", snapshot="first")  # an earlier snapshot, never finished: it removes nothing
    s.read("old", 1, 2, 3, 4, 5, 6)
    s.close("old")
    s.insert(20, "streamed")
    s.lose_delete(2)
    s.lose_delete(5)
    s.lose_delete(20)
    s.lose_insert(7, "unseen")  # the snapshot reads it
    s.start("second")
    s.insert(9, "after-start")  # in the first chunk's range, after it was read: the stream has it
    s.open("s1", snapshot="second")
    s.read("s1", 1, 3, 4)
    s.update(3, "in-s1")  # dropped READ, the stream event is after P0
    s.close("s1")
    s.insert(8, "between")
    s.change_key(8, 2)  # 2 comes back through the stream
    s.open("s2", snapshot="second")
    s.read("s2", 6, 7)
    s.close("s2")
    if finished:
        s.done("second", chunks=2, condition=condition)
    s.update(1, "last")
    return s


SCRIPTS = {"every_rule": every_rule, "truncates": truncates, "phantoms": phantoms}
