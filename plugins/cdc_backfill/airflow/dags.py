"""The product's DAGs as functions: a user's DAG file is one import and one call.

    from cdc_backfill.airflow.dags import incremental_snapshot

    incremental_snapshot()

Each function builds its DAG while Airflow imports the calling file, which registers it there (its
``fileloc`` is that file). ``cdc-backfill airflow dags --into FOLDER`` writes one such file per DAG;
this checkout's ``dags/`` holds the same files. Nothing here touches a database or the network: the
form's defaults are read from the environment and the project's config only.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, CronDataIntervalTimetable, dag, task

from cdc_backfill.airflow.defaults import default_landing, default_state
from cdc_backfill.airflow.operators import CdcCaptureDrainOperator, CdcStopSnapshotOperator
from cdc_backfill.airflow.params import capture_params, doctor_params, snapshot_params, stop_params
from cdc_backfill.airflow.pipeline import snapshot_pipeline
from cdc_backfill.airflow.schedules import load_schedules, schedules_file

TAG = "cdc_backfill"

INCREMENTAL_SNAPSHOT_DOC = """\
Snapshot tables while the source stays live, then rebuild and verify their state.

Trigger it with the form: the tables (regexes of schema.table), an optional condition, surrogate key,
chunk size, readers, the chunk files' compression, the engine (native, or a Debezium connector reading
the same signal table), where the stream comes from, the folders, verify yes or no. Tasks: validate ->
signal -> snapshot (one per table) -> drain the capture -> wait until the stream has passed the last
window -> reconcile (spark-submit on the spark_default connection) -> verify. A snapshot stopped with
cdc_stop_snapshot ends as skipped.
"""

CAPTURE_POSTGRES_DOC = """\
Land the PostgreSQL stream on a schedule, for users without Debezium.

Each run drains: it lands every transaction committed until it started, confirms it to the slot and
ends. One run at a time (they share the slot). The schedule is CDC_BACKFILL_CAPTURE_SCHEDULE (cron or
preset), every 10 minutes by default; like every new DAG it starts paused.
"""

STOP_SNAPSHOT_DOC = """\
Send stop-snapshot for some tables, or (none named) for every running snapshot.

The snapshot engine honours it between two chunks; the stopped tables' snapshot tasks end as skipped.
"""

DOCTOR_DOC = "Check from inside an Airflow worker that the source, Java and Spark are usable."

SCHEDULED_BACKFILL_DOC = """\
One DAG per [[backfill]] entry of the schedules file (cdc_scheduled_backfills.toml beside the DAG
file, or the file named by CDC_BACKFILL_SCHEDULES; cdc_scheduled_backfills.example.toml shows the
format). Each DAG is created paused.

Each run snapshots the entry's tables with its condition rendered for the run's data interval
({{ data_interval_start }}, {{ data_interval_end }}; intervals in UTC), then reconciles (and verifies,
if asked). With catchup, or `airflow backfill create --dag-id ... --from-date ... --to-date ...`, past
intervals are read one run each.
"""


def incremental_snapshot(dag_id: str = "cdc_incremental_snapshot") -> DAG:
    """The snapshot DAG its form triggers: signal, snapshot, drain, wait, reconcile, re-read, verify."""

    @dag(
        dag_id=dag_id,
        description="Snapshot tables while the source stays live (form: the collections), then reconcile and verify",
        schedule=None,
        catchup=False,
        tags=[TAG],
        doc_md=INCREMENTAL_SNAPSHOT_DOC,
        params=snapshot_params(),
        render_template_as_native_obj=True,
    )
    def cdc_incremental_snapshot() -> None:
        snapshot_pipeline(
            collections="{{ params.collections }}",
            condition="{{ params.condition }}",
            surrogate_key="{{ params.surrogate_key }}",
            chunk_size="{{ params.chunk_size }}",
            readers="{{ params.readers }}",
            chunk_compression="{{ params.chunk_compression }}",
            engine="{{ params.engine }}",
            capture="{{ params.capture }}",
            topics="{{ params.topics }}",
            kafka_conn_id="{{ params.kafka_conn_id }}",
            source_conn_id="{{ params.source_conn_id }}",
            landing_dir="{{ params.landing_dir }}",
            state_dir="{{ params.state_dir }}",
            verify="{{ params.verify }}",
        )

    return cdc_incremental_snapshot()


def capture_postgres(dag_id: str = "cdc_capture_postgres", schedule: str | None = None) -> DAG:
    """The PostgreSQL capture drained on a schedule (``schedule``, else CDC_BACKFILL_CAPTURE_SCHEDULE,
    else every 10 minutes)."""

    @dag(
        dag_id=dag_id,
        description="Land the PostgreSQL change stream in the landing zone on a schedule (no Debezium needed)",
        schedule=schedule or os.environ.get("CDC_BACKFILL_CAPTURE_SCHEDULE", "*/10 * * * *"),
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,
        tags=[TAG],
        doc_md=CAPTURE_POSTGRES_DOC,
        params=capture_params(),
        render_template_as_native_obj=True,
    )
    def cdc_capture_postgres() -> None:
        CdcCaptureDrainOperator(
            task_id="drain",
            landing_dir="{{ params.landing_dir }}",
            collections="{{ params.collections }}",
            source_conn_id="{{ params.source_conn_id }}",
        )

    return cdc_capture_postgres()


def stop_snapshot(dag_id: str = "cdc_stop_snapshot") -> DAG:
    """stop-snapshot for the collections of its form, or every running snapshot."""

    @dag(
        dag_id=dag_id,
        description="Stop running snapshots: the collections given, or (none given) every one",
        schedule=None,
        catchup=False,
        tags=[TAG],
        doc_md=STOP_SNAPSHOT_DOC,
        params=stop_params(),
        render_template_as_native_obj=True,
    )
    def cdc_stop_snapshot() -> None:
        CdcStopSnapshotOperator(
            task_id="stop",
            collections="{{ params.collections }}",
            source_conn_id="{{ params.source_conn_id }}",
        )

    return cdc_stop_snapshot()


def doctor(dag_id: str = "cdc_doctor") -> DAG:
    """The stack checked from a worker: the source, Java, Spark."""

    @dag(
        dag_id=dag_id,
        description="Check from a worker that the source, Java and Spark are usable",
        schedule=None,
        catchup=False,
        tags=[TAG],
        doc_md=DOCTOR_DOC,
        params=doctor_params(),
    )
    def cdc_doctor() -> None:
        @task
        def check_stack(params: dict | None = None) -> list[dict[str, object]]:
            from cdc_backfill.airflow.tasks import doctor_task

            return doctor_task((params or {}).get("source_conn_id"))

        check_stack()

    return cdc_doctor()


def scheduled_backfills(folder: str | Path) -> list[DAG]:
    """One paused DAG per ``[[backfill]]`` entry of the schedules file found for ``folder`` (the DAG
    file's folder): none without one; a broken file is the DAG file's import error."""
    dags = []
    for entry in load_schedules(schedules_file(Path(folder))):
        with DAG(
            dag_id=entry.dag_id,
            description=entry.description or f"Scheduled backfill of {', '.join(entry.collections)}",
            schedule=CronDataIntervalTimetable(entry.schedule, timezone="UTC") if entry.schedule else None,
            start_date=entry.start_date,
            catchup=entry.catchup,
            is_paused_upon_creation=True,  # a schedule runs only once its owner unpauses it
            max_active_runs=entry.max_active_runs,
            tags=[TAG, "scheduled_backfill"],
            doc_md=(entry.description + "\n\n" if entry.description else "") + SCHEDULED_BACKFILL_DOC,
            render_template_as_native_obj=True,
        ) as scheduled:
            snapshot_pipeline(
                collections=list(entry.collections),
                condition=entry.condition or "",
                surrogate_key=entry.surrogate_key or "",
                chunk_size=entry.chunk_size,
                readers=entry.readers,
                chunk_compression=entry.chunk_compression,
                engine=entry.engine,
                capture=entry.capture,
                topics=entry.topics,
                kafka_conn_id=entry.kafka_conn_id,
                source_conn_id=entry.source_conn_id,
                landing_dir=entry.landing_dir or default_landing(),
                state_dir=entry.state_dir or default_state(),
                verify=entry.verify,
                reconcile=entry.reconcile,
            )
        dags.append(scheduled)
    return dags


# The DAG files a user's dags folder gets (``cdc-backfill dags``), and this checkout's dags/:
# file name -> (what it says it holds, the call that builds it).
DAG_FILES = {
    "cdc_incremental_snapshot.py": ("The snapshot DAG its form triggers", "incremental_snapshot()"),
    "cdc_capture_postgres.py": ("The PostgreSQL capture, drained on a schedule", "capture_postgres()"),
    "cdc_stop_snapshot.py": ("Stops running snapshots", "stop_snapshot()"),
    "cdc_doctor.py": ("Checks from a worker that the source, Java and Spark are usable", "doctor()"),
    "cdc_scheduled_backfill.py": (
        "One DAG per [[backfill]] entry of cdc_scheduled_backfills.toml beside this file",
        "scheduled_backfills(Path(__file__).parent)",
    ),
}


def dag_file_text(name: str) -> str:
    """The text of the DAG file ``name`` (a key of DAG_FILES): one import, one call."""
    summary, call = DAG_FILES[name]
    function = call.partition("(")[0]
    lines = [f'"""{summary} (cdc_backfill.airflow.dags.{function})."""', ""]
    if "Path(" in call:
        lines += ["from pathlib import Path", ""]
    lines += [f"from cdc_backfill.airflow.dags import {function}", "", call, ""]
    return "\n".join(lines)


class DagFileExists(FileExistsError):
    """A DAG file of another content is in the way; nothing was written."""


def write_dag_files(folder: Path, force: bool = False) -> list[Path]:
    """Write every DAG file into ``folder`` (created); the files written. A file that exists with other
    content is left alone and refused unless ``force``: nothing is written then."""
    folder.mkdir(parents=True, exist_ok=True)
    texts = {folder / name: dag_file_text(name) for name in DAG_FILES}
    clash = [p for p, text in texts.items() if p.exists() and p.read_text() != text]
    if clash and not force:
        raise DagFileExists(
            f"{', '.join(str(p) for p in clash)} exist(s) with other content: move them away or add --force"
        )
    for path, text in texts.items():
        path.write_text(text)
    return list(texts)
