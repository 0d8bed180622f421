"""The snapshot pipeline's tasks, wired inside the DAG being defined: validate -> signal -> snapshot
(one task per collection) -> drain -> wait for the stream -> reconcile (spark-submit) -> reread
(the keys of rows missing a value, if any) -> verify.

Shared by ``cdc_incremental_snapshot`` (values from the trigger form) and each
``cdc_scheduled_backfill__*`` DAG (values from its config entry, the condition templated with the data
interval). Arguments are templates or literals; nothing here touches a database.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import TriggerRule

from cdc_backfill.airflow.operators import (
    CdcCaptureDrainOperator,
    CdcExecuteSnapshotOperator,
    CdcReconcileOperator,
    CdcRereadOperator,
    CdcSnapshotOperator,
    CdcValidateSnapshotOperator,
    CdcVerifyOperator,
)
from cdc_backfill.airflow.sensors import CdcWindowsClosedSensor

# Downstream of the snapshot a skipped task means "stopped": go on with the collections that finished,
# stop the run when none did.
AFTER_SNAPSHOT = TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS


def pulled(task_id: str, key: str) -> str:
    """A value of an earlier task as a template, not an XComArg: an XComArg would make that task a direct
    upstream, and its success would let the tasks after a fully stopped snapshot run anyway."""
    return f"{{{{ ti.xcom_pull(task_ids='{task_id}', key='{key}') }}}}"


def snapshot_pipeline(
    *,
    collections: Any,
    condition: Any,
    surrogate_key: Any,
    chunk_size: Any,
    readers: Any,
    engine: Any,
    capture: Any,
    source_conn_id: Any,
    landing_dir: Any,
    state_dir: Any,
    verify: Any,
    chunk_compression: Any = "auto",
    topics: Any = None,
    kafka_conn_id: Any = None,
    reconcile: bool = True,
    spark_conn_id: str = "spark_default",
    quiet_seconds: float = 60.0,
) -> dict[str, Any]:
    """Create the tasks in the current DAG; returns them by name (tests and DAG docs use it)."""
    validate = CdcValidateSnapshotOperator(
        task_id="validate",
        collections=collections,
        condition=condition,
        surrogate_key=surrogate_key,
        chunk_size=chunk_size,
        readers=readers,
        chunk_compression=chunk_compression,
        engine=engine,
        capture=capture,
        landing_dir=landing_dir,
        state_dir=state_dir,
        verify=verify,
        topics=topics,
        kafka_conn_id=kafka_conn_id,
        source_conn_id=source_conn_id,
    )
    signal = signal_task(
        validate.output,
        collections=collections,
        condition=condition,
        surrogate_key=surrogate_key,
        chunk_size=chunk_size,
        source_conn_id=source_conn_id,
    )
    snapshot = snapshot_task(validate.output, signal, source_conn_id)
    drain, wait = stream_tasks(snapshot, source_conn_id, quiet_seconds)
    signal >> snapshot >> drain >> wait
    tasks: dict[str, Any] = {
        "validate": validate, "signal": signal, "snapshot": snapshot, "drain": drain, "wait": wait,
    }  # fmt: skip
    if not reconcile:
        return tasks
    after = reconcile_tasks(spark_conn_id, source_conn_id)
    wait >> after["reconcile"] >> after["reread"] >> after["verify"]
    tasks.update(after)
    return tasks


def signal_task(
    plan: Any, *, collections: Any, condition: Any, surrogate_key: Any, chunk_size: Any, source_conn_id: Any
) -> CdcExecuteSnapshotOperator:
    """Send the execute signal of the validated ``plan`` (the validate task's output); its output is the
    collections, one snapshot task each."""
    return CdcExecuteSnapshotOperator(
        task_id="signal",
        signal_id=plan["signal_id"],
        collections=collections,
        condition=condition,
        surrogate_key=surrogate_key,
        chunk_size=chunk_size,
        capture=plan["capture"],
        landing_dir=plan["landing_dir"],
        source_conn_id=source_conn_id,
    )


def snapshot_task(plan: Any, signal: CdcExecuteSnapshotOperator, source_conn_id: Any) -> Any:
    """One mapped snapshot task per collection the signal named, retried: the engine resumes a range
    where its last chunk ended."""
    return CdcSnapshotOperator.partial(
        task_id="snapshot",
        signal_id=plan["signal_id"],
        landing_dir=plan["landing_dir"],
        readers=plan["readers"],
        chunk_compression=plan["chunk_compression"],
        engine=plan["engine"],
        source_conn_id=source_conn_id,
        retries=2,
        retry_delay=timedelta(seconds=10),
    ).expand(collection=signal.output)


def stream_tasks(
    snapshot: Any, source_conn_id: Any, quiet_seconds: float
) -> tuple[CdcCaptureDrainOperator, CdcWindowsClosedSensor]:
    """(drain, wait): land the stream up to now, then wait until it has passed the snapshot's last window."""
    drain = CdcCaptureDrainOperator(
        task_id="drain",
        landing_dir=pulled("validate", "landing_dir"),
        capture=pulled("validate", "capture"),
        engine=pulled("validate", "engine"),
        signal_id=pulled("validate", "signal_id"),
        source_conn_id=source_conn_id,
        trigger_rule=AFTER_SNAPSHOT,
    )
    wait = CdcWindowsClosedSensor(
        task_id="wait_for_stream",
        landing_dir=pulled("validate", "landing_dir"),
        snapshots=snapshot.output,
        engine=pulled("validate", "engine"),
        capture=pulled("validate", "capture"),
        signal_id=pulled("validate", "signal_id"),
        topics=pulled("validate", "topics"),
        kafka_conn_id=pulled("validate", "kafka_conn_id"),
        baseline_windows=pulled("signal", "debezium_windows"),
        source_conn_id=source_conn_id,
        quiet_seconds=quiet_seconds,
        trigger_rule=AFTER_SNAPSHOT,
    )
    return drain, wait


def reconcile_tasks(spark_conn_id: str, source_conn_id: Any) -> dict[str, Any]:
    """reconcile -> reread -> verify, by name (not wired): every value pulled from the validate task."""
    reconcile = CdcReconcileOperator(
        task_id="reconcile",
        conn_id=spark_conn_id,
        landing_dir=pulled("validate", "landing_dir"),
        state_dir=pulled("validate", "state_dir"),
        collections=pulled("validate", "collections"),
        signal_table=pulled("validate", "signal_table"),
        capture=pulled("validate", "capture"),
        topics=pulled("validate", "topics"),
        kafka_conn_id=pulled("validate", "kafka_conn_id"),
        trigger_rule=AFTER_SNAPSHOT,
    )
    # rows the stream never sent a value for: their keys are re-read by a snapshot of their own
    reread = CdcRereadOperator(
        task_id="reread",
        collections=pulled("validate", "collections"),
        state_dir=pulled("validate", "state_dir"),
        source_conn_id=source_conn_id,
    )
    verify = CdcVerifyOperator(
        task_id="verify",
        collections=pulled("validate", "collections"),
        state_dir=pulled("validate", "state_dir"),
        landing_dir=pulled("validate", "landing_dir"),
        capture=pulled("validate", "capture"),
        enabled=pulled("validate", "verify"),
        signal_id=pulled("validate", "signal_id"),
        source_conn_id=source_conn_id,
        trigger_rule=AFTER_SNAPSHOT,
    )
    return {"reconcile": reconcile, "reread": reread, "verify": verify}
