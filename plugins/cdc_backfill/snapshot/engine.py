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

import logging
import signal as os_signal
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg2
import pyarrow as pa
import sqlalchemy as sa

from cdc_backfill.config import source_engine
from cdc_backfill.names import quoted_table
from cdc_backfill.pg.connect import SESSION_OPTIONS, libpq_dsn
from cdc_backfill.signals.marks import DONE_SUFFIX, START_SUFFIX, done_data, start_data, window_data
from cdc_backfill.signals.model import (
    SNAPSHOT_DONE,
    SNAPSHOT_START,
    WINDOW_CLOSE,
    WINDOW_OPEN,
    Signal,
    close_id,
    open_id,
)
from cdc_backfill.signals.states import UNFINISHED, RangeStatus
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.signals.tables import utc_now
from cdc_backfill.signals.validate import CollectionPlan
from cdc_backfill.snapshot.chunks import (
    copy_rows,
    count_chunks,
    land_chunk,
    read_events,
    remove_partial_chunks,
    write_watermark,
)
from cdc_backfill.snapshot.control import Control, SignalControl
from cdc_backfill.snapshot.faults import CRASH_ENV, crash_point
from cdc_backfill.snapshot.progress import HEARTBEAT_SECONDS, NULL_RANGE, ProgressStore, RangeProgress
from cdc_backfill.snapshot.ranges import plan_ranges
from cdc_backfill.snapshot.shape import SnapshotError, TableShape, table_shape
from cdc_backfill.snapshot.sql import ChunkTable, chunk_select, key_params

__all__ = ["CRASH_ENV", "Control", "SnapshotEngine", "SnapshotError", "TableShape"]

log = logging.getLogger(__name__)


class SnapshotEngine:
    collection: str | None = None  # set when the engine runs one collection only (Airflow's mapped tasks)

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
        self.signal_control = SignalControl(self.engine, self.signals, self.progress)
        t = self.signals.signal
        self.signal_sql = quoted_table(t.schema, t.name)
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
        remove_partial_chunks(self.landing, self.collection)

    def apply_control_signals(self) -> Control:
        return self.signal_control.apply()

    def control(self, force: bool = False) -> Control:
        """The current control state, re-read at most every half second (readers ask between chunks)."""
        with self._control_lock:
            if force or time.monotonic() - self._control_at > self.control_interval:
                self._control = self.apply_control_signals()
                self._control_at = time.monotonic()
            return self._control

    def request_stop(self, *_: object) -> None:
        self._stop_requested = True

    def pending_work(self) -> list[tuple[Signal, CollectionPlan]]:
        """Accepted or running execute signals and their collections not finished yet, oldest first."""
        return self.signal_control.pending_work()

    # ------------------------------------------------------------ the run loop

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
                self.signal_control.mark_paused()
            for sig, plan in work:
                if self.control().paused or self._stop_requested:
                    break
                self.snapshot_collection(sig, plan)
                self.signal_control.refresh_signal(sig.id)
            if self.control(force=True).paused:
                self.signal_control.mark_paused()
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
            self.signal_control.end_collection(sig.id, plan.collection, RangeStatus.FAILED, reason)
            return
        todo = [r for r in ranges if r.status in UNFINISHED]
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
            while t.is_alive():  # a heartbeat while the readers read: a dead engine shows as interrupted
                t.join(HEARTBEAT_SECONDS)
                if t.is_alive():
                    self.progress.heartbeat(sig.id, plan.collection)
        if errors:
            reason = f"{type(errors[0]).__name__}: {str(errors[0]).splitlines()[0] if str(errors[0]) else ''}"
            self.signal_control.end_collection(sig.id, plan.collection, RangeStatus.FAILED, reason)
            log.error("%s failed: %s", plan.collection, reason)
            return
        self._finish(sig, plan)

    def _mark(self, kind: str, suffix: str, data: str) -> None:
        """Insert one of the engine's own rows into the signal table and commit."""
        with self.engine.begin() as conn:
            conn.execute(
                sa.insert(self.signals.signal).values(id=uuid.uuid4().hex + suffix, type=kind, data=data)
            )

    def _finish(self, sig: Signal, plan: CollectionPlan) -> None:
        """Once every range is read, tell the stream (the done row of DESIGN.md §6 rule 7) how many
        chunk files of this snapshot landed: the reconcile then knows when it has applied them all. A
        stopped, paused or failed collection writes nothing. A crash just before this row leaves the
        snapshot unfinished for the rule: no phantom is removed, nothing wrong is."""
        ranges = self.progress.ranges(sig.id, plan.collection)
        if not ranges or any(r.status != RangeStatus.DONE for r in ranges):
            return
        chunks = count_chunks(self.landing, plan.collection, sig.id)
        self._mark(
            SNAPSHOT_DONE,
            DONE_SUFFIX,
            done_data(plan.collection, sig.id, chunks, plan.condition, self.dialect),
        )
        log.info("%s: done row written, %s chunk file(s) landed", plan.collection, chunks)

    def _plan(self, sig: Signal, plan: CollectionPlan, shape: TableShape) -> list[RangeProgress]:
        """Fix the largest key and cut the key space into ranges, reading keys only. The start row is
        committed first: its position is the snapshot's P0 (DESIGN.md §6 rule 7)."""
        self._mark(SNAPSHOT_START, START_SUFFIX, start_data(plan.collection, sig.id))
        log.info("%s: start row written", plan.collection)
        with self.engine.connect() as conn:
            cut = plan_ranges(
                conn, shape.chunk_table(), self.dialect, self.readers, plan.chunk_size, plan.condition
            )
        self.progress.plan(sig.id, plan.collection, cut.ranges, cut.to_read)
        if cut.empty:
            self._land_empty(sig, shape)
            self.progress.set_collection(
                sig.id, plan.collection, RangeStatus.DONE, "empty when the snapshot started"
            )
        log.info(
            "%s: largest key fixed, %s range(s) planned over ~%s rows (%s to read)",
            plan.collection, len(cut.ranges), cut.estimate, cut.to_read,
        )  # fmt: skip
        return self.progress.ranges(sig.id, plan.collection)

    def _land_empty(self, sig: Signal, shape: TableShape) -> None:
        """An empty table lands one empty chunk in a window of its own: the reconcile then knows the
        collection and its columns, gives it an empty state (verify finds it equal), and the done row
        counts a chunk it can judge, so the snapshot removes the state's rows as phantoms."""
        chunk_id = uuid.uuid4().hex
        data = window_data(shape.collection, sig.id)
        conn = psycopg2.connect(libpq_dsn(self.url, replication=True))
        try:
            write_watermark(conn, self.signal_sql, open_id(chunk_id), WINDOW_OPEN, data)
            write_watermark(conn, self.signal_sql, close_id(chunk_id), WINDOW_CLOSE, data)
        finally:
            conn.close()
        table, _ = read_events(b"", shape, shape.chunk_table(), chunk_id, sig.id)
        land_chunk(self.landing, shape.collection, chunk_id, table)
        log.info("%s: empty: an empty chunk landed", shape.collection)

    # ------------------------------------------------------------ one range, chunk by chunk

    def _read_range(
        self, conn: Any, sig: Signal, plan: CollectionPlan, shape: TableShape, rng: RangeProgress
    ) -> None:
        """Chunk after chunk until the range is done. A chunk's landing and progress record run on a
        helper thread while the next chunk is read (at most two chunks of a reader in memory); progress
        is still recorded in chunk order and only after the chunk has landed."""
        ct = shape.chunk_table()
        if rng.status == RangeStatus.PENDING:
            self.progress.update(rng, status=RangeStatus.RUNNING, started_at=utc_now())
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
        land_chunk(self.landing, shape.collection, chunk_id, table)
        log.info(
            "%s range %s chunk %s: %s rows landed", shape.collection, rng.range_no, chunk_no, table.num_rows
        )
        crash_point("after-landing", chunk_no)
        self.progress.update(
            rng,
            only_if_active=True,
            last_key=last_key,
            chunks_done=chunks,
            rows_read=rows,
            status=RangeStatus.DONE if done else RangeStatus.RUNNING,
        )
        crash_point("after-progress", chunk_no)
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
        data = window_data(shape.collection, sig.id)
        write_watermark(conn, self.signal_sql, open_id(chunk_id), WINDOW_OPEN, data)
        log.info("%s: low watermark written", tag)
        crash_point("after-open", chunk_no)
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
        data_rows = copy_rows(conn, stmt, self.dialect, params)  # ends the read's transaction
        crash_point("during-read", chunk_no)

        write_watermark(conn, self.signal_sql, close_id(chunk_id), WINDOW_CLOSE, data)
        log.info("%s: high watermark written", tag)
        crash_point("after-close", chunk_no)
        table, last = read_events(data_rows, shape, ct, chunk_id, sig.id)
        return chunk_id, table, last
