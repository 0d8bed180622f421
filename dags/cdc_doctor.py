"""Checks from a worker that the source, Java and Spark are usable (cdc_backfill.airflow.dags.doctor)."""

from cdc_backfill.airflow.dags import doctor

doctor()
