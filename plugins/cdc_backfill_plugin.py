"""The AirflowPlugin that registers what Airflow shows for cdc_backfill.

Airflow's plugin loader imports this file in every Airflow process: it must stay light and must not
import Spark (tests check that importing it leaves pyspark unimported).
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin


class CdcBackfillPlugin(AirflowPlugin):
    name = "cdc_backfill"
