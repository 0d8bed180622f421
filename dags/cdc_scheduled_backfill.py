"""One DAG per [[backfill]] entry of cdc_scheduled_backfills.toml beside this file (cdc_backfill.airflow.dags.scheduled_backfills)."""

from pathlib import Path

from cdc_backfill.airflow.dags import scheduled_backfills

scheduled_backfills(Path(__file__).parent)
