"""Run the native snapshot engine for one collection of one signal (one mapped task per collection)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from cdc_backfill.airflow import plans
from cdc_backfill.airflow.hooks import CdcSourceHook, SourceNotConfigured
from cdc_backfill.airflow.operators.base import CdcOperator, refuse
from cdc_backfill.lakepath import lake_path
from cdc_backfill.signals.statuses import ACTIVE, RangeStatus
from cdc_backfill.snapshot.compression import CHUNK_COMPRESSIONS


class CdcSnapshotOperator(CdcOperator):
    """Run the native snapshot engine for one collection of one signal, until it is done, stopped or failed.

    The engine logs every chunk (``... chunk 12: low watermark written``, ``high watermark written``,
    ``rows landed``); this task also logs a progress line every ``heartbeat_seconds`` while it waits, so
    a long snapshot shows it is alive. After the last chunk it writes a fence into the stream (see
    :func:`cdc_backfill.capture.fence.stream_passed`) and returns it with the counts. A stopped collection
    ends the task as skipped; a failed one fails it with the engine's reason. In ``engine: debezium`` mode
    Debezium reads the table: the task returns at once.
    """

    template_fields: Sequence[str] = (
        "signal_id", "collection", "landing_dir", "readers", "chunk_compression", "engine", "source_conn_id",
        "signal_table",
    )  # fmt: skip

    def __init__(
        self,
        *,
        signal_id: Any,
        collection: Any,
        landing_dir: Any,
        readers: Any = 1,
        chunk_compression: Any = "auto",
        engine: Any = "native",
        heartbeat_seconds: float = 30.0,
        poll_seconds: float = 2.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.signal_id = signal_id
        self.collection = collection
        self.landing_dir = landing_dir
        self.readers = readers
        self.chunk_compression = chunk_compression  # of the chunk files (snapshot.compression)
        self.engine = engine  # the form's choice: native or debezium
        self.heartbeat_seconds = heartbeat_seconds
        self.poll_seconds = poll_seconds
        self._snapshot: Any = None  # the running snapshot engine, for on_kill

    def execute(self, context: Context) -> dict[str, Any]:
        collection = str(self.collection)
        signal_id = str(self.signal_id)
        if plans.optional_text(self.engine) == "debezium":
            self.log.info("%s: Debezium runs this snapshot; the sensor follows its windows", collection)
            return {"collection": collection, "status": "debezium", "fence_lsn": None}
        hook = self.hook()
        try:
            readers = plans.as_int(self.readers, "readers", 1, plans.MAX_READERS)
            compression = plans.one_of(self.chunk_compression, "chunk_compression", CHUNK_COMPRESSIONS)
            hook.require_source_url()
        except (SourceNotConfigured, ValueError) as exc:
            raise refuse(exc) from exc
        with hook.snapshot_engine(
            lake_path(str(self.landing_dir)), readers, signal_id, collection, compression
        ) as snapshot:
            self._snapshot = snapshot
            done = threading.Event()
            beat = threading.Thread(target=self._heartbeat, args=(snapshot, collection, done), daemon=True)
            beat.start()
            try:
                outcome = self._run(snapshot, hook, signal_id, collection)
            finally:
                done.set()
        self.log.info(
            "%s: %s, %s chunks, %s rows",
            collection,
            outcome.status,
            f"{outcome.chunks:,}",
            f"{outcome.rows:,}",
        )
        if outcome.status == RangeStatus.STOPPED:
            raise AirflowSkipException(f"{collection}: {outcome.reason or 'stopped'}")
        if outcome.status == RangeStatus.FAILED:
            raise AirflowFailException(f"{collection}: {outcome.reason}")
        fence = hook.emit_fence(f"{signal_id}:{collection}")
        self.log.info("%s: fence written at LSN %s", collection, fence)
        return {
            "collection": collection,
            "status": outcome.status,
            "chunks": outcome.chunks,
            "rows": outcome.rows,
            "fence_lsn": fence,
        }

    def _run(self, snapshot: Any, hook: CdcSourceHook, signal_id: str, collection: str) -> plans.Outcome:
        paused_logged = 0.0
        while True:
            snapshot.run(follow=False)
            outcome = plans.collection_outcome(snapshot.progress.ranges(signal_id, collection))
            if outcome.finished:
                return outcome
            if snapshot.stop_requested:
                raise AirflowFailException(f"{collection}: the task was asked to stop")
            if outcome.status == "not-started":
                status = hook.signal_status(signal_id)
                if status is None or status[0] not in ACTIVE:
                    raise AirflowFailException(
                        f"signal {signal_id} is {status[0] if status else 'not in the status table'}"
                        + (f": {status[1]}" if status and status[1] else "")
                    )
            if time.monotonic() - paused_logged > self.heartbeat_seconds:
                self.log.info("%s: waiting (paused by pause-snapshot, or not started yet)", collection)
                paused_logged = time.monotonic()
            time.sleep(self.poll_seconds)

    def _heartbeat(self, snapshot: Any, collection: str, done: threading.Event) -> None:
        while not done.wait(self.heartbeat_seconds):
            self.log.info(
                "%s: still running, %s chunks and %s rows landed by this task",
                collection, f"{snapshot.chunks_written:,}", f"{snapshot.rows_written:,}",
            )  # fmt: skip

    def on_kill(self) -> None:
        if self._snapshot is not None:
            self._snapshot.request_stop()
