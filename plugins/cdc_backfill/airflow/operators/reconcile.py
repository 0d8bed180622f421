"""The reconcile task: Airflow's spark-submit of the project's reconcile job, in the runtime the
project's Spark tasks need (Java, spark-submit on PATH, a local master on the loopback address)."""

from __future__ import annotations

from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Context

from cdc_backfill.airflow import plans
from cdc_backfill.airflow.operators.base import prepare_runtime


class CdcReconcileOperator(SparkSubmitOperator):
    """``SparkSubmitOperator`` of the reconcile job on the Spark connection ``conn_id``; its task log
    shows the job's steps."""

    def __init__(self, *, conn_id: str = "spark_default", **kwargs: Any) -> None:
        super().__init__(conn_id=conn_id, **kwargs)
        self.spark_conn_id = conn_id

    def execute(self, context: Context) -> None:
        prepare_runtime(context, spark_conn_id=self.spark_conn_id, first_compiler_only=self._small())
        super().execute(context)

    def _small(self) -> bool:
        """As the CLI decides (``reconcile.run_size``); arguments the project did not give keep both
        compilers."""
        from cdc_backfill.lakepath import lake_path
        from cdc_backfill.reconcile.run_size import first_compiler_only

        args = plans.reconcile_args(self.application_args or [])
        if args is None:
            return False
        landing, state = lake_path(args.landing), lake_path(args.state)
        return first_compiler_only(landing, state, args.collections, ingest=args.ingest)
