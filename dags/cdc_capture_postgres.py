"""cdc_capture_postgres: land the PostgreSQL stream on a schedule, for users without Debezium.

Each run drains: it lands every transaction committed until it started, confirms it to the slot and
ends. One run at a time (they share the slot). The schedule is CDC_BACKFILL_CAPTURE_SCHEDULE (cron or
preset), every 10 minutes by default; like every new DAG it starts paused.
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import dag

from cdc_backfill.airflow.operators import CdcCaptureDrainOperator
from cdc_backfill.airflow.params import capture_params


@dag(
    dag_id="cdc_capture_postgres",
    description="Land the PostgreSQL change stream in the landing zone on a schedule (no Debezium needed)",
    schedule=os.environ.get("CDC_BACKFILL_CAPTURE_SCHEDULE", "*/10 * * * *"),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    tags=["cdc_backfill"],
    doc_md=__doc__,
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


cdc_capture_postgres()
