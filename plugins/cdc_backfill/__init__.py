"""cdc_backfill: incremental snapshots and backfills for change-data-capture pipelines.

The package is imported by DAGs, Spark jobs and the CLI alike. Modules about signals, chunk planning,
event parsing and positions import neither Airflow nor Spark; Airflow-facing code lives under
``cdc_backfill.airflow`` and Spark-facing code under ``cdc_backfill.spark``.
"""

from __future__ import annotations

__version__ = "0.1.0"
