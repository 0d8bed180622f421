"""Stops running snapshots (cdc_backfill.airflow.dags.stop_snapshot)."""

from cdc_backfill.airflow.dags import stop_snapshot

stop_snapshot()
