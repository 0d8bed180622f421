"""The snapshot DAG its form triggers (cdc_backfill.airflow.dags.incremental_snapshot)."""

from cdc_backfill.airflow.dags import incremental_snapshot

incremental_snapshot()
