"""The snapshot engine (DESIGN.md §4): for each accepted execute-snapshot signal, read every collection in
key-ordered chunks, each between a low and a high watermark committed into the signal table, and land
each chunk's rows as READ events in a Parquet file.

Per chunk, in this order (a crash between any two steps is harmless: see the module test):
  1. insert ``<chunk>-open`` into the signal table and commit         "chunk 12: low watermark written"
  2. read the chunk: ``COPY (SELECT ... WHERE key > :last AND key <= :max ... ORDER BY key LIMIT n)``
  3. insert ``<chunk>-close`` and commit
  4. land the rows: temporary name, fsync, rename, fsync of the folder
  5. record progress (last key, chunks, rows) in the progress table

The largest key is fixed when a collection starts: rows inserted later reach the state through the
stream. With several readers the key range is cut up front into ranges (reading keys only); each reader
takes ranges and every chunk keeps its own window. Memory: one chunk per reader.
"""

from __future__ import annotations

import io
import json
import logging
import math
import os
import signal as os_signal
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg2
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import sqlalchemy as sa

from cdc_backfill.config import source_engine
from cdc_backfill.files import fsync_dir
from cdc_backfill.layout import SNAPSHOT_DIR, snapshot_dir
from cdc_backfill.names import split_collection
from cdc_backfill.pg.catalog import primary_key, table_columns, unique_keys
from cdc_backfill.pg.connect import SESSION_OPTIONS, libpq_dsn
from cdc_backfill.pgtypes import PgColumn, arrow_type
from cdc_backfill.signals.model import (
    EXECUTE,
    PAUSE,
    RESUME,
    STOP,
    WINDOW_CLOSE,
    WINDOW_OPEN,
    Signal,
    close_id,
    open_id,
)
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.signals.tables import utc_now
from cdc_backfill.signals.validate import CollectionPlan, validate
from cdc_backfill.snapshot.progress import NULL_RANGE, ProgressStore, RangeProgress
from cdc_backfill.snapshot.sql import (
    ChunkTable,
    boundary_select,
    chunk_select,
    compile_sql,
    count_select,
    key_params,
    max_key_select,
)

log = logging.getLogger(__name__)

CRASH_ENV = "CDC_BACKFILL_SNAPSHOT_CRASH_AT"  # fault injection for tests: step[:chunk number]
RANGES_PER_READER = 4
META_COLUMNS = ("_cdc_op", "_cdc_collection", "_cdc_chunk_id")


class SnapshotError(RuntimeError):
    """A collection cannot be snapshotted; the message says why."""


@dataclass(frozen=True)
class TableShape:
    """A collection as the engine reads it."""

    collection: str
    schema: str
    name: str
    columns: tuple[PgColumn, ...]
    identity: tuple[str, ...]  # the key of its events: the primary key, else the surrogate key
    chunk_key: tuple[str, ...]  # the columns chunks are ordered by: the surrogate key, else the primary key

    def chunk_table(self) -> ChunkTable:
        by_name = {c.name: c for c in self.columns}
        nullable = len(self.chunk_key) == 1 and by_name[self.chunk_key[0]].nullable
        return ChunkTable(
            self.schema,
            self.name,
            tuple(c.name for c in self.columns),
            self.chunk_key,
            tuple(by_name[k].type for k in self.chunk_key),
            nullable_key=nullable,
        )

    def arrow_schema(self) -> pa.Schema:
        fields = [pa.field(c.name, arrow_type(c)) for c in self.columns]
        fields += [pa.field(m, pa.string()) for m in META_COLUMNS]
        meta = {
            "cdc.collection": self.collection,
            "cdc.key": json.dumps(list(self.identity)),
            "cdc.chunk_key": json.dumps(list(self.chunk_key)),
            "cdc.columns": json.dumps([{"name": c.name, "type": c.type, "oid": c.oid} for c in self.columns]),
        }
        return pa.schema(fields, metadata=meta)


def table_shape(conn: sa.Connection, plan: CollectionPlan) -> TableShape:
    schema, table = split_collection(plan.collection)
    cols = table_columns(conn, schema, table)
    if not cols:
        raise SnapshotError(f"{plan.collection} no longer exists")
    pk = primary_key(conn, schema, table)
    if plan.key != pk:
        # Keyset pagination over a column that repeats would skip rows: the chunk key must be unique.
        if tuple(plan.key) not in unique_keys(conn, schema, table):
            raise SnapshotError(
                f"surrogate-key {', '.join(plan.key)} of {plan.collection} has no unique index: chunks by a "
                "column that repeats would skip rows; create a unique index or choose a unique column"
            )
    identity = pk or plan.key
    return TableShape(plan.collection, schema, table, cols, identity, plan.key)


def _crash_point(step: str, chunk_no: int) -> None:
    want = os.environ.get(CRASH_ENV)
    if not want:
        return
    name, _, at = want.partition(":")
    if name == step and (not at or int(at) == chunk_no):
        log.warning("fault injection: killing myself at %s of chunk %s", step, chunk_no)
        os.kill(os.getpid(), os_signal.SIGKILL)


@dataclass
class Control:
    """What the operator asked for, read from the signals between chunks."""

    paused: bool = False
    stopped: set[tuple[str, str]] | None = None  # (signal id, collection) pairs that must stop


class SnapshotEngine:
    def __init__(
        self,
        url: str,
        landing: Path,
        readers: int = 1,
        signal_table: str | None = None,
        poll_seconds: float = 2.0,
        window_hook: Callable[[TableShape, list[str] | None], None] | None = None,
    ) -> None:
        """``window_hook`` is called inside every window, between the low watermark and the read: tests
        use it to change rows exactly there."""
        self.url = url
        self.window_hook = window_hook
        self.control_interval = 0.5  # seconds between two reads of the signals by the readers
        self.landing = Path(landing)
        self.readers = max(1, readers)
        self.poll_seconds = poll_seconds
        self.engine = source_engine(
            url, connect_args={"options": SESSION_OPTIONS}, pool_size=self.readers + 2
        )
        self.dialect = self.engine.dialect.name
        if self.dialect != "postgresql":
            raise SnapshotError(
                f"the native engine reads PostgreSQL live; {self.dialect} runs through Debezium"
            )
        self.signals = SignalStore(url, signal_table, engine=self.engine)
        self.progress = ProgressStore(self.engine, self.signals.schema)
        self._control_lock = threading.Lock()
        self._control_at = 0.0
        self._control = Control()
        self._stop_requested = False
        self.chunks_written = 0
        self.rows_written = 0

    # ------------------------------------------------------------ signals and control

    def init(self) -> None:
        self.signals.init()
        self.progress.init()
        # A chunk file left half-written by a crash was never recorded: its chunk is read again.
        for stale in (self.landing / SNAPSHOT_DIR).glob("*/.*.parquet.part"):
            stale.unlink(missing_ok=True)

    def _ordered_statuses(self) -> list[Any]:
        st = self.signals.status
        with self.engine.connect() as conn:
            return list(conn.execute(sa.select(st).order_by(st.c.received_at, st.c.signal_id)))

    def apply_control_signals(self) -> Control:
        """Review new signals, apply stops, and work out whether the engine is paused."""
        self.signals.review_new()
        statuses = self._ordered_statuses()
        parsed = {sid: s for sid, s in self.signals.read() if isinstance(s, Signal)}
        paused = False
        for row in statuses:
            sig = parsed.get(row.signal_id)
            if sig is None:
                continue
            if sig.type == PAUSE:
                paused = True
            elif sig.type == RESUME:
                paused = False
            if sig.type in (PAUSE, RESUME) and row.status == "accepted":
                self.signals.set_status(sig.id, "done")
            if sig.type == STOP and row.status == "accepted":
                self._apply_stop(sig, statuses, parsed)
        stopped = {(p.signal_id, p.collection) for p in self.progress.ranges() if p.status == "stopped"}
        return Control(paused=paused, stopped=stopped)

    def _apply_stop(self, stop: Signal, statuses: list[Any], parsed: dict[str, Signal]) -> None:
        import re

        stop_at = next(r.received_at for r in statuses if r.signal_id == stop.id)
        patterns = [re.compile(p) for p in stop.collections]
        stopped = []
        for row in statuses:
            sig = parsed.get(row.signal_id)
            if sig is None or sig.type != EXECUTE or row.status not in ("accepted", "running", "paused"):
                continue
            if row.received_at and stop_at and row.received_at > stop_at:
                continue  # a stop applies to snapshots asked for before it
            for coll in json.loads(row.collections or "[]"):
                if not patterns or any(p.fullmatch(coll) for p in patterns):
                    self._stop_collection(sig.id, coll, f"stopped by {stop.id}")
                    stopped.append(coll)
            self._refresh_signal_status(sig.id)
        self.signals.set_status(
            stop.id, "done", reason=f"stopped: {', '.join(stopped) or 'nothing was running'}"
        )
        log.info("stop %s applied to %s", stop.id, ", ".join(stopped) or "nothing")

    def _stop_collection(self, signal_id: str, collection: str, reason: str) -> None:
        if not self.progress.ranges(signal_id, collection):
            # not started yet: a single placeholder range records that it must not start
            self.progress.plan(signal_id, collection, [(0, None, None)], 0)
        self.progress.set_collection(signal_id, collection, "stopped", reason)

    def control(self, force: bool = False) -> Control:
        """The current control state, re-read at most every half second (readers ask between chunks)."""
        with self._control_lock:
            if force or time.monotonic() - self._control_at > self.control_interval:
                self._control = self.apply_control_signals()
                self._control_at = time.monotonic()
            return self._control

    def _refresh_signal_status(self, signal_id: str) -> None:
        ranges = self.progress.ranges(signal_id)
        row = next((r for r in self._ordered_statuses() if r.signal_id == signal_id), None)
        if row is None:
            return
        planned = {r.collection for r in ranges}
        wanted = set(json.loads(row.collections or "[]"))
        statuses = {r.status for r in ranges}
        if wanted - planned or statuses & {"pending", "running"}:
            status = "running" if ranges else row.status
        elif statuses == {"failed"}:
            status = "failed"
        elif statuses == {"stopped"}:
            status = "stopped"
        else:
            status = "done"  # some collections may have failed or stopped: the reason says which
        progress = {
            "chunks": sum(r.chunks_done for r in ranges),
            "rows": sum(r.rows_read for r in ranges),
            "collections_done": sum(
                1 for c in planned if all(r.status == "done" for r in ranges if r.collection == c)
            ),
            "collections": len(wanted),
        }
        failed = [f"{r.collection}: {r.reason}" for r in ranges if r.status == "failed"]
        self.signals.set_status(signal_id, status, progress=progress, reason="; ".join(failed) or None)

    # ------------------------------------------------------------ the run loop

    def _mark_paused(self) -> None:
        for row in self._ordered_statuses():
            if row.status in ("accepted", "running") and row.type == EXECUTE:
                self.signals.set_status(row.signal_id, "paused")

    def request_stop(self, *_: object) -> None:
        self._stop_requested = True

    def pending_work(self) -> list[tuple[Signal, CollectionPlan]]:
        """Accepted or running execute signals and their collections not finished yet, oldest first."""
        parsed = {sid: s for sid, s in self.signals.read() if isinstance(s, Signal)}
        progress = self.progress.ranges()
        finished = {
            (p.signal_id, p.collection)
            for p in progress
            if all(
                q.status in ("done", "stopped", "failed")
                for q in progress
                if (q.signal_id, q.collection) == (p.signal_id, p.collection)
            )
        }
        catalog = None
        work = []
        for row in self._ordered_statuses():
            sig = parsed.get(row.signal_id)
            if sig is None or sig.type != EXECUTE or row.status not in ("accepted", "running", "paused"):
                continue
            catalog = catalog or self.signals.catalog()
            validated = validate(sig, catalog, self.signals.protected)  # checked again before acting
            for plan in validated.plans:
                if (sig.id, plan.collection) not in finished:
                    work.append((sig, plan))
            for coll, reason in validated.errors.items():
                if (sig.id, coll) not in finished:
                    self.progress.plan(sig.id, coll, [(0, None, None)], 0)
                    self.progress.set_collection(sig.id, coll, "failed", reason)
            if not validated.plans:
                self._refresh_signal_status(sig.id)
        return work

    def run(self, follow: bool = False, max_seconds: float | None = None) -> None:
        """Run accepted signals to the end (``follow=False``: then return) or until SIGTERM/SIGINT."""
        self.init()
        if follow and threading.current_thread() is threading.main_thread():
            os_signal.signal(os_signal.SIGTERM, self.request_stop)
            os_signal.signal(os_signal.SIGINT, self.request_stop)
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        while not self._stop_requested:
            ctl = self.control(force=True)
            work = [] if ctl.paused else self.pending_work()
            if ctl.paused:
                log.info("paused: waiting for resume-snapshot")
                self._mark_paused()
            for sig, plan in work:
                if self.control().paused or self._stop_requested:
                    break
                self.snapshot_collection(sig, plan)
                self._refresh_signal_status(sig.id)
            if self.control(force=True).paused:
                self._mark_paused()
            if not follow and (not work or ctl.paused):
                return
            if deadline is not None and time.monotonic() > deadline:
                return
            if not work or ctl.paused:
                time.sleep(self.poll_seconds)

    # ------------------------------------------------------------ one collection

    def snapshot_collection(self, sig: Signal, plan: CollectionPlan) -> None:
        try:
            with self.engine.connect() as conn:
                shape = table_shape(conn, plan)
            ranges = self.progress.ranges(sig.id, plan.collection) or self._plan(sig, plan, shape)
        except (SnapshotError, sa.exc.SQLAlchemyError) as exc:
            reason = str(exc).splitlines()[0]
            log.error("%s: %s", plan.collection, reason)
            self.progress.plan(sig.id, plan.collection, [(0, None, None)], 0)
            self.progress.set_collection(sig.id, plan.collection, "failed", reason)
            return
        todo = [r for r in ranges if r.status in ("pending", "running")]
        log.info("%s: %s range(s) to read with %s reader(s)", plan.collection, len(todo), self.readers)
        queue = list(todo)
        lock = threading.Lock()
        errors: list[BaseException] = []

        def reader() -> None:
            conn = psycopg2.connect(libpq_dsn(self.url, replication=True))
            try:
                while True:
                    with lock:
                        if not queue or errors:
                            return
                        rng = queue.pop(0)
                    self._read_range(conn, sig, plan, shape, rng)
            except BaseException as exc:  # reported by the main thread
                errors.append(exc)
            finally:
                conn.close()

        threads = [
            threading.Thread(target=reader, name=f"reader-{i}") for i in range(min(self.readers, len(todo)))
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            reason = f"{type(errors[0]).__name__}: {str(errors[0]).splitlines()[0] if str(errors[0]) else ''}"
            self.progress.set_collection(sig.id, plan.collection, "failed", reason)
            log.error("%s failed: %s", plan.collection, reason)

    def _plan(self, sig: Signal, plan: CollectionPlan, shape: TableShape) -> list[RangeProgress]:
        """Fix the largest key and cut the key space into ranges, reading keys only."""
        ct = shape.chunk_table()
        with self.engine.connect() as conn:
            hi_row = conn.execute(
                sa.text(compile_sql(max_key_select(ct, self.dialect), self.dialect))
            ).first()
            estimate = int(conn.execute(sa.text(compile_sql(count_select(ct), self.dialect))).scalar_one())
            ranges: list[tuple[int, list[str] | None, list[str] | None]] = []
            if hi_row is not None:
                hi = [str(v) for v in hi_row]
                n = 1
                if self.readers > 1:
                    n = max(1, min(self.readers * RANGES_PER_READER, estimate // max(1, plan.chunk_size)))
                bounds: list[list[str] | None] = [None]
                if n > 1:
                    step = math.ceil(estimate / n)
                    for _ in range(n - 1):
                        lo = bounds[-1]
                        stmt = boundary_select(ct, self.dialect, after=lo is not None, step=step)
                        params = {**key_params("lo", lo), **key_params("hi", hi)}
                        row = conn.execute(_bind(stmt, self.dialect), params).first()
                        if row is None:
                            break
                        bounds.append([str(v) for v in row])
                for i, lo in enumerate(bounds):
                    ranges.append((i, lo, bounds[i + 1] if i + 1 < len(bounds) else hi))
            if ct.nullable_key:
                ranges.append((NULL_RANGE, None, None))
            if not ranges:  # an empty table: nothing to read, done at once
                ranges.append((0, None, None))
        self.progress.plan(sig.id, plan.collection, ranges, estimate)
        planned = self.progress.ranges(sig.id, plan.collection)
        if hi_row is None:
            self.progress.set_collection(sig.id, plan.collection, "done", "empty when the snapshot started")
            planned = self.progress.ranges(sig.id, plan.collection)
        log.info(
            "%s: largest key fixed, %s range(s) planned over ~%s rows", plan.collection, len(ranges), estimate
        )
        return planned

    # ------------------------------------------------------------ one range, chunk by chunk

    def _read_range(
        self, conn: Any, sig: Signal, plan: CollectionPlan, shape: TableShape, rng: RangeProgress
    ) -> None:
        """Chunk after chunk until the range is done. A chunk's landing and progress record run on a
        helper thread while the next chunk is read (at most two chunks of a reader in memory); progress
        is still recorded in chunk order and only after the chunk has landed."""
        ct = shape.chunk_table()
        if rng.status == "pending":
            self.progress.update(rng, status="running", started_at=utc_now())
        after = rng.start_after
        chunks = rng.chunks_done
        rows = rng.rows_read
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="lander") as lander:
            pending: Future[None] | None = None
            try:
                while True:
                    ctl = self.control()
                    if ctl.paused or self._stop_requested:
                        return
                    if ctl.stopped and (sig.id, plan.collection) in ctl.stopped:
                        return
                    chunk_id, table, last = self._chunk(conn, sig, plan, shape, ct, after, rng, chunks + 1)
                    chunks += 1
                    rows += table.num_rows
                    done = rng.range_no == NULL_RANGE or table.num_rows < plan.chunk_size or last is None
                    if pending is not None:
                        pending.result()  # the previous chunk has landed and its progress is recorded
                    pending = lander.submit(
                        self._land_and_record, shape, chunk_id, table, rng, chunks,
                        last if last is not None else after, chunks, rows, done,
                    )  # fmt: skip
                    if done:
                        return
                    after = last
            finally:
                if pending is not None:
                    pending.result()

    def _land_and_record(
        self,
        shape: TableShape,
        chunk_id: str,
        table: pa.Table,
        rng: RangeProgress,
        chunk_no: int,
        last_key: list[str] | None,
        chunks: int,
        rows: int,
        done: bool,
    ) -> None:
        self._land(shape, chunk_id, table)
        log.info(
            "%s range %s chunk %s: %s rows landed", shape.collection, rng.range_no, chunk_no, table.num_rows
        )
        _crash_point("after-landing", chunk_no)
        self.progress.update(
            rng,
            only_if_active=True,
            last_key=last_key,
            chunks_done=chunks,
            rows_read=rows,
            status="done" if done else "running",
        )
        _crash_point("after-progress", chunk_no)
        with self._control_lock:
            self.chunks_written += 1
            self.rows_written += table.num_rows

    def _chunk(
        self,
        conn: Any,
        sig: Signal,
        plan: CollectionPlan,
        shape: TableShape,
        ct: ChunkTable,
        after: list[str] | None,
        rng: RangeProgress,
        chunk_no: int,
    ) -> tuple[str, pa.Table, list[str] | None]:
        """Read one chunk between its watermarks; returns (chunk id, rows as Arrow, last key as text)."""
        hi = rng.hi
        null_range = rng.range_no == NULL_RANGE
        chunk_id = uuid.uuid4().hex
        where = "null keys" if null_range else f"range {rng.range_no}"
        tag = f"{shape.collection} {where} chunk {chunk_no}"
        data = json.dumps({"data-collection": shape.collection, "signal": sig.id})
        self._watermark(conn, open_id(chunk_id), WINDOW_OPEN, data)
        log.info("%s: low watermark written", tag)
        _crash_point("after-open", chunk_no)
        if self.window_hook is not None:
            self.window_hook(shape, after)

        stmt = chunk_select(
            ct,
            self.dialect,
            after=after is not None and not null_range,
            upto=hi is not None and not null_range,
            limit=None if null_range else plan.chunk_size,
            condition=plan.condition,
            null_keys=null_range,
            key_text=True,
        )
        params = {**key_params("lo", after), **key_params("hi", hi)}
        buf = io.BytesIO()
        with conn.cursor() as cur:
            sql = cur.mogrify(compile_sql(stmt, self.dialect), params).decode()
            cur.copy_expert(f"COPY ({sql}) TO STDOUT WITH (FORMAT csv)", buf)
        conn.commit()  # ends the read's transaction: the close watermark must commit after it
        _crash_point("during-read", chunk_no)

        self._watermark(conn, close_id(chunk_id), WINDOW_CLOSE, data)
        log.info("%s: high watermark written", tag)
        _crash_point("after-close", chunk_no)
        table, last = self._to_arrow(buf.getvalue(), shape, ct, chunk_id)
        return chunk_id, table, last

    def _watermark(self, conn: Any, row_id: str, kind: str, data: str) -> None:
        """Insert a window row into the signal table and commit: the stream carries it at its position."""
        with conn.cursor() as cur:
            cur.execute(
                f"INSERT INTO {self._signal_sql} (id, type, data) VALUES (%s, %s, %s)", (row_id, kind, data)
            )
        conn.commit()

    @property
    def _signal_sql(self) -> str:
        t = self.signals.signal
        quote = lambda n: '"' + n.replace('"', '""') + '"'  # noqa: E731
        return f"{quote(t.schema)}.{quote(t.name)}" if t.schema else quote(t.name)

    def _to_arrow(
        self, data: bytes, shape: TableShape, ct: ChunkTable, chunk_id: str
    ) -> tuple[pa.Table, list[str] | None]:
        key_names = [f"_cdc_k{i}" for i in range(len(ct.key))]
        names = [c.name for c in shape.columns] + key_names
        types: dict[str, pa.DataType] = {}
        for c in shape.columns:
            t = arrow_type(c)
            types[c.name] = pa.string() if pa.types.is_binary(t) else t
        for k in key_names:
            types[k] = pa.string()
        if data:
            table = pacsv.read_csv(
                io.BytesIO(data),
                read_options=pacsv.ReadOptions(column_names=names, block_size=8 << 20),
                convert_options=pacsv.ConvertOptions(
                    column_types=types,
                    true_values=["t"],
                    false_values=["f"],
                    null_values=[""],
                    strings_can_be_null=True,
                    quoted_strings_can_be_null=False,
                ),
            )
        else:
            table = pa.table({n: pa.array([], type=types[n]) for n in names})
        last = None
        if table.num_rows:
            last = [table.column(k)[table.num_rows - 1].as_py() for k in key_names]
        table = table.drop_columns(key_names)
        for i, c in enumerate(shape.columns):  # bytea arrives as \x-hex text
            if c.kind == "bytea":
                values = [None if v is None else bytes.fromhex(v[2:]) for v in table.column(i).to_pylist()]
                table = table.set_column(i, c.name, pa.array(values, pa.binary()))
        n = table.num_rows
        table = table.append_column("_cdc_op", pa.array(["r"] * n, pa.string()))
        table = table.append_column("_cdc_collection", pa.array([shape.collection] * n, pa.string()))
        table = table.append_column("_cdc_chunk_id", pa.array([chunk_id] * n, pa.string()))
        return table.cast(shape.arrow_schema()), last

    def _land(self, shape: TableShape, chunk_id: str, table: pa.Table) -> None:
        folder = snapshot_dir(self.landing, shape.collection)
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / f"{chunk_id}.parquet"
        tmp = folder / f".{chunk_id}.parquet.part"
        with open(tmp, "wb") as fh:
            pq.write_table(table, fh, compression="zstd")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
        fsync_dir(folder)


def _bind(stmt: Any, dialect: str) -> sa.TextClause:
    """A compiled statement as text with :named parameters for SQLAlchemy's execute."""
    import re

    sql = compile_sql(stmt, dialect)
    return sa.text(re.sub(r"%\((\w+)\)s", r":\1", sql))
