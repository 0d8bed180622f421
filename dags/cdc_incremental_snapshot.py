"""cdc_incremental_snapshot: snapshot tables while the source stays live, then rebuild and verify their state.

Trigger it with the form: the tables (regexes of schema.table), an optional condition, surrogate key, chunk
size, readers, the chunk files' compression, the engine (native, or a Debezium connector reading the same
signal table), where the stream comes from, the folders, verify yes or no. Tasks: validate -> signal ->
snapshot (one per table) -> drain the capture -> wait until the stream has passed the last window ->
reconcile (spark-submit on the spark_default connection) -> verify. A snapshot stopped with
cdc_stop_snapshot ends as skipped.
"""

from __future__ import annotations

from airflow.sdk import dag

from cdc_backfill.airflow.params import snapshot_params
from cdc_backfill.airflow.pipeline import snapshot_pipeline


@dag(
    dag_id="cdc_incremental_snapshot",
    description="Snapshot tables while the source stays live (form: the collections), then reconcile and verify",
    schedule=None,
    catchup=False,
    tags=["cdc_backfill"],
    doc_md=__doc__,
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


cdc_incremental_snapshot()
