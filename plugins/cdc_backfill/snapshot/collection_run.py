"""One collection of one execute signal (docs/design.md §4): its shape read from the catalog, its key ranges
planned once behind the start row, readers taking the ranges side by side while the engine's heartbeat
shows it alive, and the done row once every range is read. A collection that cannot be read fails alone:
the signal's other collections go on."""

from __future__ import annotations

import logging
import threading
import uuid
from typing import TYPE_CHECKING

import psycopg2
import sqlalchemy as sa

from cdc_backfill.pg.arrowrows import RowsConnection
from cdc_backfill.pg.conninfo import libpq_dsn
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
from cdc_backfill.signals.statuses import UNFINISHED, RangeStatus
from cdc_backfill.signals.validate import CollectionPlan
from cdc_backfill.snapshot.chunks import count_chunks, land_chunk, read_events, write_watermark
from cdc_backfill.snapshot.progress import HEARTBEAT_SECONDS, RangeProgress
from cdc_backfill.snapshot.range_plan import plan_ranges
from cdc_backfill.snapshot.range_reader import RangeReader
from cdc_backfill.snapshot.shape import SnapshotError, TableShape, table_shape

if TYPE_CHECKING:
    from cdc_backfill.snapshot.engine import SnapshotEngine

log = logging.getLogger(__name__)


class CollectionRun:
    """Snapshots one collection of one signal for ``snapshot``, which owns the connections, the control
    (pause, stops) and the counts."""

    def __init__(self, snapshot: SnapshotEngine, sig: Signal, plan: CollectionPlan) -> None:
        self.snapshot = snapshot
        self.sig = sig
        self.plan = plan

    def run(self) -> None:
        """Read every unfinished range; a collection that cannot be read, or whose reader failed, is
        recorded as failed with the first line of the reason."""
        collection = self.plan.collection
        try:
            with self.snapshot.sa_engine.connect() as conn:
                shape = table_shape(conn, self.plan)
            ranges = self.snapshot.progress.ranges(self.sig.id, collection) or self._plan(shape)
        except (SnapshotError, sa.exc.SQLAlchemyError) as exc:
            reason = str(exc).splitlines()[0]
            log.error("%s: %s", collection, reason)
            self._fail(reason)
            return
        todo = [r for r in ranges if r.status in UNFINISHED]
        log.info("%s: %s range(s) to read with %s reader(s)", collection, len(todo), self.snapshot.readers)
        errors = self._read_ranges(shape, todo)
        if errors:
            reason = f"{type(errors[0]).__name__}: {str(errors[0]).splitlines()[0] if str(errors[0]) else ''}"
            self._fail(reason)
            log.error("%s failed: %s", collection, reason)
            return
        self._finish()

    def _fail(self, reason: str) -> None:
        self.snapshot.signal_control.end_collection(
            self.sig.id, self.plan.collection, RangeStatus.FAILED, reason
        )

    # ------------------------------------------------------------ the readers

    def _read_ranges(self, shape: TableShape, todo: list[RangeProgress]) -> list[BaseException]:
        """Up to ``readers`` threads take the ranges in order; the first error stops the others taking
        more, and is returned (with any other) for the main thread to report."""
        queue = list(todo)
        lock = threading.Lock()
        errors: list[BaseException] = []
        threads = [
            threading.Thread(target=self._take_ranges, args=(shape, queue, lock, errors), name=f"reader-{i}")
            for i in range(min(self.snapshot.readers, len(todo)))
        ]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():  # a heartbeat while the readers read: a dead engine shows as interrupted
                t.join(HEARTBEAT_SECONDS)
                if t.is_alive():
                    self.snapshot.progress.heartbeat(self.sig.id, self.plan.collection)
        return errors

    def _take_ranges(
        self,
        shape: TableShape,
        queue: list[RangeProgress],
        lock: threading.Lock,
        errors: list[BaseException],
    ) -> None:
        """One reader thread: a connection of its own (its watermarks commit apart from other readers'),
        ranges off the shared queue until none is left or another reader failed."""
        dsn = libpq_dsn(self.snapshot.url, replication=True)
        conn = psycopg2.connect(dsn)
        adbc_conn = None
        try:
            adbc_conn = RowsConnection(dsn)
            reader = RangeReader(self.snapshot, self.sig, self.plan, shape, conn, adbc_conn)
            try:
                while True:
                    with lock:
                        if not queue or errors:
                            return
                        rng = queue.pop(0)
                    reader.read(rng)
            finally:
                reader.close()  # the last chunk landed (or its error raised) before the reader ends
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            if adbc_conn is not None:
                adbc_conn.close()
            conn.close()

    # ------------------------------------------------------------ start, empty and done

    def _plan(self, shape: TableShape) -> list[RangeProgress]:
        """Fix the largest key and cut the key space into ranges, reading keys only. The start row is
        committed first: its position is the snapshot's P0 (docs/design.md §6 rule 7)."""
        snapshot, sig, plan = self.snapshot, self.sig, self.plan
        snapshot.signals.write_mark(SNAPSHOT_START, START_SUFFIX, start_data(plan.collection, sig.id))
        log.info("%s: start row written", plan.collection)
        with snapshot.sa_engine.connect() as conn:
            cut = plan_ranges(
                conn, shape.chunk_table(), snapshot.dialect, snapshot.readers, plan.chunk_size, plan.condition
            )
        snapshot.progress.plan(sig.id, plan.collection, cut.ranges, cut.to_read)
        if cut.empty:
            self._land_empty(shape)
            snapshot.progress.set_collection(
                sig.id, plan.collection, RangeStatus.DONE, "empty when the snapshot started"
            )
        log.info(
            "%s: largest key fixed, %s range(s) planned over ~%s rows (%s to read)",
            plan.collection, len(cut.ranges), cut.estimate, cut.to_read,
        )  # fmt: skip
        return snapshot.progress.ranges(sig.id, plan.collection)

    def _land_empty(self, shape: TableShape) -> None:
        """An empty table lands one empty chunk in a window of its own: the reconcile then knows the
        collection and its columns, gives it an empty state (verify finds it equal), and the done row
        counts a chunk it can judge, so the snapshot removes the state's rows as phantoms."""
        snapshot = self.snapshot
        chunk_id = uuid.uuid4().hex
        data = window_data(shape.collection, self.sig.id)
        conn = psycopg2.connect(libpq_dsn(snapshot.url, replication=True))
        try:
            write_watermark(conn, snapshot.signal_sql, open_id(chunk_id), WINDOW_OPEN, data)
            write_watermark(conn, snapshot.signal_sql, close_id(chunk_id), WINDOW_CLOSE, data)
        finally:
            conn.close()
        table = read_events(None, shape, chunk_id, self.sig.id)
        land_chunk(snapshot.landing, shape, chunk_id, table, snapshot.chunk_compression)
        log.info("%s: empty: an empty chunk landed", shape.collection)

    def _finish(self) -> None:
        """Once every range is read, tell the stream (the done row of docs/design.md §6 rule 7) how many
        chunk files of this snapshot landed: the reconcile then knows when it has applied them all. A
        stopped, paused or failed collection writes nothing. A crash just before this row leaves the
        snapshot unfinished for the rule: no phantom is removed, nothing wrong is."""
        snapshot, sig, plan = self.snapshot, self.sig, self.plan
        ranges = snapshot.progress.ranges(sig.id, plan.collection)
        if not ranges or any(r.status != RangeStatus.DONE for r in ranges):
            return
        chunks = count_chunks(snapshot.landing, plan.collection, sig.id)
        snapshot.signals.write_mark(
            SNAPSHOT_DONE,
            DONE_SUFFIX,
            done_data(plan.collection, sig.id, chunks, plan.condition, snapshot.dialect),
        )
        log.info("%s: done row written, %s chunk file(s) landed", plan.collection, chunks)
