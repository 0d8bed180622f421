"""Validate a snapshot request, send execute-snapshot and stop-snapshot signals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowSkipException

from cdc_backfill.airflow import plans
from cdc_backfill.airflow.hooks import CdcKafkaHook, SourceNotConfigured
from cdc_backfill.airflow.operators.base import CdcOperator, refuse
from cdc_backfill.capture.debezium.connector import DebeziumRefused
from cdc_backfill.kafka.topics import KafkaError
from cdc_backfill.lakepath import lake_path
from cdc_backfill.signals.debezium_windows import scan_windows
from cdc_backfill.signals.model import SignalError, new_signal_id


class CdcValidateSnapshotOperator(CdcOperator):
    """Check a snapshot request against the source's catalog without writing anything.

    Returns (one XCom per key): ``signal_id`` (new), ``collections`` (the resolved names, for mapping),
    ``signal_table`` (the source's) and the normalised form values.
    """

    template_fields: Sequence[str] = (*plans.FORM_FIELDS, "source_conn_id", "signal_table")

    def __init__(
        self,
        *,
        collections: Any,
        condition: Any = None,
        surrogate_key: Any = None,
        chunk_size: Any = None,
        readers: Any = 1,
        chunk_compression: Any = "auto",
        engine: Any = "native",
        capture: Any = "drain",
        landing_dir: Any,
        state_dir: Any,
        verify: Any = True,
        topics: Any = None,
        kafka_conn_id: Any = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("multiple_outputs", True)
        super().__init__(**kwargs)
        self.collections = collections
        self.condition = condition
        self.surrogate_key = surrogate_key
        self.chunk_size = chunk_size
        self.readers = readers
        self.chunk_compression = chunk_compression
        self.engine = engine  # the form's choice: native or debezium
        self.capture = capture
        self.landing_dir = landing_dir
        self.state_dir = state_dir
        self.verify = verify
        self.topics = topics  # capture kafka: a regex of whole topic names
        self.kafka_conn_id = kafka_conn_id

    def execute(self, context: Context) -> dict[str, Any]:
        hook = self.hook()
        try:
            request = plans.SnapshotRequest.from_form({f: getattr(self, f) for f in plans.FORM_FIELDS})
            signal = request.signal(new_signal_id())
            self.log.info("source: %s", hook.describe())
            validated, signal_table = hook.check_signal(signal)
            self._check_topics(request)
        except (SignalError, ValueError, SourceNotConfigured, KafkaError) as exc:
            raise refuse(exc) from exc
        for plan in validated.plans:
            self.log.info(
                "%s: key (%s), chunk size %s%s, condition %s",
                plan.collection, ", ".join(plan.key), plan.chunk_size,
                " (grown while chunks read fast)" if plan.adaptive else "", plan.condition or "none",
            )  # fmt: skip
        for path in (request.landing_dir, request.state_dir):
            lake_path(path).mkdir(parents=True, exist_ok=True)  # fails here, not after an hour of snapshot
        return {
            "signal_id": signal.id,
            "collections": list(validated.collections),
            "signal_table": signal_table,
            "landing_dir": request.landing_dir,
            "state_dir": request.state_dir,
            "engine": request.snapshot_by,
            "capture": request.capture,
            "readers": request.readers,
            "chunk_compression": request.chunk_compression,
            "verify": request.verify,
            "topics": request.topics,
            "kafka_conn_id": request.kafka_conn_id,
        }

    def _check_topics(self, request: plans.SnapshotRequest) -> None:
        """With ``capture: kafka``, the broker answers and the topics match: a broker that cannot be
        reached is refused before anything is written."""
        if request.capture != "kafka" or not request.topics:
            return
        broker, count = CdcKafkaHook(request.kafka_conn_id).partitions(request.topics)
        self.log.info(
            "Kafka at %s: %s partition(s) of topics matching %s", broker.bootstrap, count, request.topics
        )


class CdcExecuteSnapshotOperator(CdcOperator):
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
                for warning in hook.ensure_capture(lake_path(landing)):
                    self.log.warning("%s", warning)
            if plans.optional_text(self.capture) == "debezium":
                landing = plans.optional_text(self.landing_dir)
                if not landing:
                    raise ValueError("capture=debezium needs landing_dir")
                # Debezium's slot must exist before the signal: a signal row written before it is not in
                # the slot's stream, and Debezium would never start the snapshot.
                ran = hook.debezium_drain(lake_path(landing))
                self.log.info("Debezium's connector is streaming: %s records landed", ran.records)
            windows = scan_windows(hook.window_rows()).windows
            validated, sent = hook.send_signal(signal)
        except (SignalError, ValueError, SourceNotConfigured, DebeziumRefused) as exc:
            raise refuse(exc) from exc
        if sent:
            self.log.info("execute-snapshot %s sent: %s", signal.id, signal.data_json())
        else:
            self.log.info("signal %s is already in the signal table (a retry): not sent again", signal.id)
        context["ti"].xcom_push(key="signal_id", value=signal.id)
        context["ti"].xcom_push(key="debezium_windows", value=windows)
        return list(validated.collections)


class CdcStopSnapshotOperator(CdcOperator):
    """Send a ``stop-snapshot`` signal: the named collections, or (none named) every running snapshot.

    The engine honours it between chunks; the snapshot tasks of the stopped collections end as skipped.
    """

    template_fields: Sequence[str] = ("collections", "source_conn_id", "signal_table")

    def __init__(self, *, collections: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.collections = collections

    def execute(self, context: Context) -> str:
        signal = plans.stop_signal(new_signal_id(), plans.as_list(self.collections))
        hook = self.hook()
        try:
            unfinished = hook.unfinished_snapshots()
            # nothing would ever mark it done: a stop with nothing to stop is not written
            why = plans.nothing_to_stop(unfinished, signal.collections)
            if why:
                raise AirflowSkipException(why)
            hook.send_signal(signal)
        except (SignalError, SourceNotConfigured) as exc:
            raise refuse(exc) from exc
        self.log.info(
            "stop-snapshot %s sent for %s", signal.id, ", ".join(signal.collections) or "everything"
        )
        return signal.id
