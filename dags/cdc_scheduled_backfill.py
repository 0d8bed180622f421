"""cdc_scheduled_backfill__<name>: one DAG per [[backfill]] entry of cdc_scheduled_backfills.toml (beside
this file, or the file named by CDC_BACKFILL_SCHEDULES); none without such a file
(cdc_scheduled_backfills.example.toml shows the format). Each DAG is created paused.

Each run snapshots the entry's tables with its condition rendered for the run's data interval
({{ data_interval_start }}, {{ data_interval_end }}; intervals in UTC), then reconciles (and verifies, if asked). With
catchup, or `airflow backfill create --dag-id ... --from-date ... --to-date ...`, past intervals are
read one run each.
"""

from __future__ import annotations

from pathlib import Path

from airflow.sdk import DAG, CronDataIntervalTimetable

from cdc_backfill.airflow.defaults import default_landing, default_state
from cdc_backfill.airflow.pipeline import snapshot_pipeline
from cdc_backfill.airflow.schedules import load_schedules, schedules_file

for entry in load_schedules(schedules_file(Path(__file__).parent)):
    with DAG(
        dag_id=entry.dag_id,
        description=entry.description or f"Scheduled backfill of {', '.join(entry.collections)}",
        # a run spans its interval (Airflow 3 would otherwise give a cron a point in time, and the
        # condition's interval would be empty)
        schedule=CronDataIntervalTimetable(entry.schedule, timezone="UTC") if entry.schedule else None,
        start_date=entry.start_date,
        catchup=entry.catchup,
        is_paused_upon_creation=True,  # a schedule runs only once its owner unpauses it
        max_active_runs=entry.max_active_runs,
        tags=["cdc_backfill", "scheduled_backfill"],
        doc_md=(entry.description + "\n\n" if entry.description else "") + __doc__,
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
    globals()[entry.dag_id] = scheduled
