"""The PostgreSQL capture, drained on a schedule (cdc_backfill.airflow.dags.capture_postgres)."""

from cdc_backfill.airflow.dags import capture_postgres

capture_postgres()
