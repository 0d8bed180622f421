"""Operators: templated fields in, one call into the package out.

A skipped task in the project's DAGs means one thing: the operator stopped that snapshot (stop-snapshot)
or asked for no verify. Everything else either succeeds or fails with the reason.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from cdc_backfill.airflow import plans
from cdc_backfill.airflow.hooks import CdcSourceHook, SourceNotConfigured


def prepare_runtime(context: Context | None = None) -> None:
    """``pre_execute`` of tasks that start Java or Spark: the embedded defaults (JAVA_HOME, SPARK_HOME,
    the venv's bin on PATH for spark-submit) in the worker, without overwriting what is set; Spark's
    JVM log at WARN (the task log shows the job's own steps, not hundreds of INFO lines)."""
    import os

    from cdc_backfill.runtime import apply_defaults
    from cdc_backfill.spark.log4j import driver_java_options

    apply_defaults()
    # spark-submit adds SPARK_SUBMIT_OPTS to the driver's JVM in client mode
    os.environ.setdefault("SPARK_SUBMIT_OPTS", driver_java_options())


def _refuse(exc: Exception) -> AirflowFailException:
    # A refusal (bad collection, bad condition, no source) does not get better on retry.
    return AirflowFailException(f"refused: {exc}")


class _CdcOperator(BaseOperator):
    ui_color = "#e8f4ea"

    def __init__(self, *, source_conn_id: str = "", signal_table: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source_conn_id = source_conn_id
        self.signal_table = signal_table

    def hook(self) -> CdcSourceHook:
        return CdcSourceHook(
            plans.optional_text(self.source_conn_id) or "", plans.optional_text(self.signal_table)
        )


# ---------------------------------------------------------------- validate and signal


class CdcValidateSnapshotOperator(_CdcOperator):
    """Check a snapshot request against the source's catalog without writing anything.

    Returns (one XCom per key): ``signal_id`` (new), ``collections`` (the resolved names, for mapping),
    ``reconcile_args`` (the spark-submit arguments) and the normalised form values.
    """

    template_fields: Sequence[str] = (
        "collections", "condition", "surrogate_key", "chunk_size", "readers", "engine", "capture",
        "landing_dir", "state_dir", "source_conn_id", "signal_table", "verify",
    )  # fmt: skip

    def __init__(
        self,
        *,
        collections: Any,
        condition: Any = None,
        surrogate_key: Any = None,
        chunk_size: Any = 4096,
        readers: Any = 1,
        engine: Any = "native",
        capture: Any = "drain",
        landing_dir: Any,
        state_dir: Any,
        verify: Any = True,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("multiple_outputs", True)
        super().__init__(**kwargs)
        self.collections = collections
        self.condition = condition
        self.surrogate_key = surrogate_key
        self.chunk_size = chunk_size
        self.readers = readers
        self.engine = engine
        self.capture = capture
        self.landing_dir = landing_dir
        self.state_dir = state_dir
        self.verify = verify

    def execute(self, context: Context) -> dict[str, Any]:
        from cdc_backfill.signals.model import SignalError, new_signal_id

        try:
            chunk = plans.as_int(self.chunk_size, "chunk_size", 1, plans.MAX_CHUNK_SIZE)
            readers = plans.as_int(self.readers, "readers", 1, plans.MAX_READERS)
            engine = plans.one_of(self.engine, "engine", plans.ENGINES)
            capture = plans.one_of(self.capture, "capture", plans.CAPTURES)
            landing = plans.optional_text(self.landing_dir)
            state = plans.optional_text(self.state_dir)
            if not landing or not state:
                raise ValueError("landing_dir and state_dir must be given")
            signal = plans.execute_signal(
                new_signal_id(),
                plans.as_list(self.collections),
                plans.optional_text(self.condition),
                plans.optional_text(self.surrogate_key),
                chunk,
            )
            hook = self.hook()
            self.log.info("source: %s", hook.describe())
            store = hook.signal_store()
            try:
                validated = store.check(signal)
            finally:
                store.engine.dispose()
        except (SignalError, ValueError, SourceNotConfigured) as exc:
            raise _refuse(exc) from exc
        for plan in validated.plans:
            self.log.info(
                "%s: key (%s), chunk size %s, condition %s",
                plan.collection, ", ".join(plan.key), plan.chunk_size, plan.condition or "none",
            )  # fmt: skip
        for path in (landing, state):
            Path(path).mkdir(parents=True, exist_ok=True)  # fails here, not after an hour of snapshot
        application, args = plans.reconcile_submit(
            landing, state, validated.collections, store.signal_collection
        )
        return {
            "signal_id": signal.id,
            "collections": list(validated.collections),
            "reconcile_application": application,
            "reconcile_args": args,
            "landing_dir": landing,
            "state_dir": state,
            "engine": engine,
            "capture": capture,
            "readers": readers,
            "verify": plans.as_bool(self.verify),
        }


class CdcExecuteSnapshotOperator(_CdcOperator):
    """Send an ``execute-snapshot`` signal (Debezium's JSON) to the source's signal table.

    With ``capture="drain"`` the capture's publication and slot are created first, so the stream holds
    every watermark of the snapshot. Sending again with the same ``signal_id`` (a retry) is a no-op.
    Returns the resolved collections (a list: the snapshot tasks are mapped over it); pushes
    ``signal_id`` and ``debezium_windows`` (Debezium's windows before the signal, the sensor's baseline in
    ``engine: debezium`` mode) as XComs of their own.
    """

    template_fields: Sequence[str] = (
        "signal_id", "collections", "condition", "surrogate_key", "chunk_size", "capture", "landing_dir",
        "source_conn_id", "signal_table",
    )  # fmt: skip

    def __init__(
        self,
        *,
        collections: Any,
        signal_id: Any = None,
        condition: Any = None,
        surrogate_key: Any = None,
        chunk_size: Any = None,
        capture: Any = "external",
        landing_dir: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.signal_id = signal_id
        self.collections = collections
        self.condition = condition
        self.surrogate_key = surrogate_key
        self.chunk_size = chunk_size
        self.capture = capture
        self.landing_dir = landing_dir

    def execute(self, context: Context) -> list[str]:
        from cdc_backfill.signals.model import SignalError, new_signal_id

        hook = self.hook()
        chunk = plans.optional_text(self.chunk_size)
        try:
            signal = plans.execute_signal(
                plans.optional_text(self.signal_id) or new_signal_id(),
                plans.as_list(self.collections),
                plans.optional_text(self.condition),
                plans.optional_text(self.surrogate_key),
                plans.as_int(chunk, "chunk_size", 1, plans.MAX_CHUNK_SIZE) if chunk else None,
            )
            if plans.optional_text(self.capture) == "drain":
                landing = plans.optional_text(self.landing_dir)
                if not landing:
                    raise ValueError("capture=drain needs landing_dir")
                for warning in hook.ensure_capture(Path(landing)):
                    self.log.warning("%s", warning)
            windows = plans.scan_windows(hook.window_rows()).windows
            store = hook.signal_store()
            try:
                if hook.signal_exists(signal.id):
                    self.log.info(
                        "signal %s is already in the signal table (a retry): not sent again", signal.id
                    )
                    validated = store.check(signal)
                else:
                    validated = store.send(signal)
                    self.log.info("execute-snapshot %s sent: %s", signal.id, signal.data_json())
            finally:
                store.engine.dispose()
        except (SignalError, ValueError, SourceNotConfigured) as exc:
            raise _refuse(exc) from exc
        context["ti"].xcom_push(key="signal_id", value=signal.id)
        context["ti"].xcom_push(key="debezium_windows", value=windows)
        return list(validated.collections)


class CdcStopSnapshotOperator(_CdcOperator):
    """Send a ``stop-snapshot`` signal: the named collections, or (none named) every running snapshot.

    The engine honours it between chunks; the snapshot tasks of the stopped collections end as skipped.
    """

    template_fields: Sequence[str] = ("collections", "source_conn_id", "signal_table")

    def __init__(self, *, collections: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.collections = collections

    def execute(self, context: Context) -> str:
        from cdc_backfill.signals.model import SignalError, new_signal_id

        signal = plans.stop_signal(new_signal_id(), plans.as_list(self.collections))
        try:
            store = self.hook().signal_store()
            try:
                store.send(signal)
            finally:
                store.engine.dispose()
        except (SignalError, SourceNotConfigured) as exc:
            raise _refuse(exc) from exc
        self.log.info(
            "stop-snapshot %s sent for %s", signal.id, ", ".join(signal.collections) or "everything"
        )
        return signal.id


# ---------------------------------------------------------------- snapshot


class CdcSnapshotOperator(_CdcOperator):
    """Run the native snapshot engine for one collection of one signal, until it is done, stopped or failed.

    The engine logs every chunk (``... chunk 12: low watermark written``, ``high watermark written``,
    ``rows landed``); this task also logs a progress line every ``heartbeat_seconds`` while it waits, so
    a long snapshot shows it is alive. After the last chunk it writes a fence into the stream (see
    :func:`cdc_backfill.airflow.plans.stream_passed`) and returns it with the counts. A stopped collection
    ends the task as skipped; a failed one fails it with the engine's reason. In ``engine: debezium`` mode
    Debezium reads the table: the task returns at once.
    """

    template_fields: Sequence[str] = (
        "signal_id", "collection", "landing_dir", "readers", "engine", "source_conn_id", "signal_table",
    )  # fmt: skip

    def __init__(
        self,
        *,
        signal_id: Any,
        collection: Any,
        landing_dir: Any,
        readers: Any = 1,
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
        self.engine = engine
        self.heartbeat_seconds = heartbeat_seconds
        self.poll_seconds = poll_seconds
        self._engine: Any = None

    def execute(self, context: Context) -> dict[str, Any]:
        collection = str(self.collection)
        signal_id = str(self.signal_id)
        if plans.optional_text(self.engine) == "debezium":
            self.log.info("%s: Debezium runs this snapshot; the sensor follows its windows", collection)
            return {"collection": collection, "status": "debezium", "fence_lsn": None}
        hook = self.hook()
        try:
            url = hook.require_source_url()
        except SourceNotConfigured as exc:
            raise _refuse(exc) from exc
        from cdc_backfill.airflow.engine import ScopedSnapshotEngine

        self._engine = engine = ScopedSnapshotEngine(
            url,
            Path(str(self.landing_dir)),
            readers=plans.as_int(self.readers, "readers", 1, plans.MAX_READERS),
            signal_table=hook.signal_table,
            signal_id=signal_id,
            collection=collection,
        )
        done = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(engine, collection, done), daemon=True)
        beat.start()
        try:
            outcome = self._run(engine, hook, signal_id, collection)
        finally:
            done.set()
            engine.engine.dispose()
        self.log.info(
            "%s: %s, %s chunks, %s rows",
            collection,
            outcome.status,
            f"{outcome.chunks:,}",
            f"{outcome.rows:,}",
        )
        if outcome.status == "stopped":
            raise AirflowSkipException(f"{collection}: {outcome.reason or 'stopped'}")
        if outcome.status == "failed":
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

    def _run(self, engine: Any, hook: CdcSourceHook, signal_id: str, collection: str) -> plans.Outcome:
        paused_logged = 0.0
        while True:
            engine.run(follow=False)
            outcome = plans.collection_outcome(engine.progress.ranges(signal_id, collection))
            if outcome.finished:
                return outcome
            if engine.stop_requested:
                raise AirflowFailException(f"{collection}: the task was asked to stop")
            if outcome.status == "not-started":
                status = hook.signal_status(signal_id)
                if status is None or status[0] not in ("accepted", "running", "paused"):
                    raise AirflowFailException(
                        f"signal {signal_id} is {status[0] if status else 'not in the status table'}"
                        + (f": {status[1]}" if status and status[1] else "")
                    )
            if time.monotonic() - paused_logged > self.heartbeat_seconds:
                self.log.info("%s: waiting (paused by pause-snapshot, or not started yet)", collection)
                paused_logged = time.monotonic()
            time.sleep(self.poll_seconds)

    def _heartbeat(self, engine: Any, collection: str, done: threading.Event) -> None:
        while not done.wait(self.heartbeat_seconds):
            self.log.info(
                "%s: still running, %s chunks and %s rows landed by this task",
                collection, f"{engine.chunks_written:,}", f"{engine.rows_written:,}",
            )  # fmt: skip

    def on_kill(self) -> None:
        if self._engine is not None:
            self._engine.request_stop()


# ---------------------------------------------------------------- capture


class CdcCaptureDrainOperator(_CdcOperator):
    """Land everything the source has committed until now (``cdc-backfill capture postgres --drain``).

    With ``capture="external"`` another process lands the stream (the capture DAG, ``capture --follow``
    or Debezium) and this task does nothing. A slot busy with another drain is waited for.
    """

    template_fields: Sequence[str] = ("landing_dir", "capture", "tables", "source_conn_id", "signal_table")

    def __init__(
        self,
        *,
        landing_dir: Any,
        capture: Any = "drain",
        tables: Any = None,
        slot: str | None = None,
        publication: str | None = None,
        max_seconds: float = 3600.0,
        busy_wait_seconds: float = 600.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.landing_dir = landing_dir
        self.capture = capture
        self.tables = tables
        self.slot = slot
        self.publication = publication
        self.max_seconds = max_seconds
        self.busy_wait_seconds = busy_wait_seconds

    def execute(self, context: Context) -> dict[str, Any] | None:
        from cdc_backfill.capture.postgres import CaptureError

        if plans.optional_text(self.capture) != "drain":
            self.log.info("capture is external: another process lands the stream")
            return None
        hook = self.hook()
        landing = Path(str(self.landing_dir))
        give_up = time.monotonic() + self.busy_wait_seconds
        while True:
            capture = hook.capture(landing, self.slot, self.publication, plans.as_list(self.tables))
            try:
                stats = capture.run(follow=False, max_seconds=self.max_seconds)
                break
            except CaptureError as exc:
                if "in use" not in str(exc) or time.monotonic() > give_up:
                    raise
                self.log.info("%s; waiting for it", exc)
                time.sleep(5)
        self.log.info(
            "drained: %s transactions, %s events, %s files", stats.transactions, stats.events, stats.files
        )
        return {"transactions": stats.transactions, "events": stats.events, "files": stats.files}


# ---------------------------------------------------------------- verify


class CdcVerifyOperator(_CdcOperator):
    """Compare each collection's reconciled state with the source, range by range (``cdc-backfill verify``).

    Fails when a range differs (``fail_on_difference``), else reports. Collections whose snapshot was
    stopped are not verified (their state is incomplete by request). Returns one report per collection.
    """

    template_fields: Sequence[str] = ("collections", "state_dir", "enabled", "signal_id", "source_conn_id")

    def __init__(
        self,
        *,
        collections: Any,
        state_dir: Any,
        enabled: Any = True,
        signal_id: Any = None,
        ranges: int = 16,
        master: str = "local[*]",
        fail_on_difference: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("pre_execute", prepare_runtime)
        super().__init__(**kwargs)
        self.collections = collections
        self.state_dir = state_dir
        self.enabled = enabled
        self.signal_id = signal_id
        self.ranges = ranges
        self.master = master
        self.fail_on_difference = fail_on_difference

    def execute(self, context: Context) -> list[dict[str, Any]]:
        from cdc_backfill.airflow.verifying import verify_collections

        if not plans.as_bool(self.enabled):
            raise AirflowSkipException("verify was not asked for")
        hook = self.hook()
        collections = plans.as_list(self.collections)
        signal_id = plans.optional_text(self.signal_id)
        if signal_id:
            stopped = {
                c
                for c in collections
                if plans.collection_outcome(hook.progress_ranges(signal_id, c)).status == "stopped"
            }
            for c in sorted(stopped):
                self.log.info("%s: snapshot stopped, not verified", c)
            collections = [c for c in collections if c not in stopped]
        if not collections:
            raise AirflowSkipException("nothing to verify: every snapshot was stopped")
        reports = verify_collections(
            hook.require_source_url(), Path(str(self.state_dir)), collections, self.ranges, self.master
        )
        differing = []
        for report in reports:
            self.log.info("verify %s: %s", report["collection"], report["verdict"])
            if not report["all_equal"]:
                differing.append(f"{report['collection']} ranges {report['differing']}")
        if differing and self.fail_on_difference:
            # a retry would find the same: a re-snapshot of the ranges (cdc-backfill verify --repair) fixes it
            raise AirflowFailException(f"the state differs from the source: {'; '.join(differing)}")
        return reports
