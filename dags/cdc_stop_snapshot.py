"""cdc_stop_snapshot: send stop-snapshot for some tables, or (none named) for every running snapshot.

The snapshot engine honours it between two chunks; the stopped tables' snapshot tasks end as skipped.
"""

from __future__ import annotations

from airflow.sdk import dag

from cdc_backfill.airflow.operators import CdcStopSnapshotOperator
from cdc_backfill.airflow.params import stop_params


@dag(
    dag_id="cdc_stop_snapshot",
    description="Stop running snapshots: the collections given, or (none given) every one",
    schedule=None,
    catchup=False,
    tags=["cdc_backfill"],
    doc_md=__doc__,
    params=stop_params(),
    render_template_as_native_obj=True,
)
def cdc_stop_snapshot() -> None:
    CdcStopSnapshotOperator(
        task_id="stop", collections="{{ params.collections }}", source_conn_id="{{ params.source_conn_id }}"
    )


cdc_stop_snapshot()
