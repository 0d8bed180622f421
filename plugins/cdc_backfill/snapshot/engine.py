"""The snapshot engine (docs/design.md §4): for each accepted execute-snapshot signal, read every collection in
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
takes ranges and every chunk keeps its own window. Memory: at most two chunks per reader (the one it reads, the one being landed).

This module holds the run loop and what the operator asked for (pause, stop); one collection runs in
``collection_run.py``, one range chunk by chunk in ``range_reader.py``.
"""

from __future__ import annotations

import logging
import signal as os_signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from cdc_backfill.config import source_engine
from cdc_backfill.lakepath import lake_path
from cdc_backfill.names import quoted_table
from cdc_backfill.pg.conninfo import SESSION_OPTIONS
from cdc_backfill.signals.model import Signal
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.signals.validate import CollectionPlan
from cdc_backfill.snapshot.chunks import remove_partial_chunks
from cdc_backfill.snapshot.collection_run import CollectionRun
from cdc_backfill.snapshot.compression import chunk_compression_for
from cdc_backfill.snapshot.control import Control, SignalControl
from cdc_backfill.snapshot.faults import CRASH_ENV
from cdc_backfill.snapshot.progress import ProgressStore
from cdc_backfill.snapshot.shape import SnapshotError, TableShape

__all__ = ["CRASH_ENV", "Control", "SnapshotEngine", "SnapshotError", "TableShape"]

log = logging.getLogger(__name__)


class SnapshotEngine:
    """Runs the accepted execute signals' collections one after the other, looks at the operator's
    signals between chunks, and counts what it landed (the Airflow task reports the counts)."""

    def __init__(
        self,
        url: str,
        landing: Path,
        readers: int = 1,
        signal_table: str | None = None,
        poll_seconds: float = 2.0,
        chunk_compression: str = "auto",
        window_hook: Callable[[TableShape, list[str] | None], None] | None = None,
        signal_id: str | None = None,
        collection: str | None = None,
    ) -> None:
        """``window_hook`` is called inside every window, between the low watermark and the read: tests
        use it to change rows exactly there. ``chunk_compression``: of the chunk files
        (``snapshot.compression.CHUNK_COMPRESSIONS``; "auto": none on a local landing, zstd on S3).
        ``signal_id`` and ``collection``: the one collection of one signal this engine runs (an Airflow
        mapped task's share, so that several run side by side); None: every accepted signal's."""
        self.url = url
        self.signal_id = signal_id
        self.collection = collection
        self.window_hook = window_hook
        self.control_interval = 0.5  # seconds between two reads of the signals by the readers
        self.landing = lake_path(landing)
        try:
            self.chunk_compression = chunk_compression_for(self.landing, chunk_compression)
        except ValueError as exc:
            raise SnapshotError(str(exc)) from None
        self.readers = max(1, readers)
        self.poll_seconds = poll_seconds
        self.sa_engine = source_engine(
            url, connect_args={"options": SESSION_OPTIONS}, pool_size=self.readers + 2
        )
        self.dialect = self.sa_engine.dialect.name
        if self.dialect != "postgresql":
            raise SnapshotError(
                f"the native engine reads PostgreSQL live; {self.dialect} runs through Debezium"
            )
        self.signals = SignalStore(url, signal_table, sa_engine=self.sa_engine)
        self.progress = ProgressStore(self.sa_engine, self.signals.schema)
        self.signal_control = SignalControl(self.sa_engine, self.signals, self.progress)
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

    def keeps_reading(self, signal_id: str, collection: str) -> bool:
        """Asked by a reader before each chunk: no once the engine is paused or asked to stop, or a stop
        signal ended this collection."""
        ctl = self.control()
        if ctl.paused or self._stop_requested:
            return False
        return not (ctl.stopped and (signal_id, collection) in ctl.stopped)

    def request_stop(self, *_: object) -> None:
        self._stop_requested = True

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def pending_work(self) -> list[tuple[Signal, CollectionPlan]]:
        """Accepted or running execute signals and their collections not finished yet, oldest first
        (those of this engine's one collection of one signal, where it has one)."""
        work = self.signal_control.pending_work()
        if self.collection is None:
            return work
        return [(s, p) for s, p in work if s.id == self.signal_id and p.collection == self.collection]

    def count_landed(self, rows: int) -> None:
        """One more chunk landed (readers land side by side: the counts move under the lock)."""
        with self._control_lock:
            self.chunks_written += 1
            self.rows_written += rows

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

    def snapshot_collection(self, sig: Signal, plan: CollectionPlan) -> None:
        CollectionRun(self, sig, plan).run()
