"""The reconcile task: Airflow's spark-submit of the project's reconcile job, in the runtime the
project's Spark tasks need (Java, spark-submit on PATH, a local master on the loopback address)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Context

from cdc_backfill.airflow import plans
from cdc_backfill.airflow.operators.base import prepare_runtime, refuse


class CdcReconcileOperator(SparkSubmitOperator):
    """``SparkSubmitOperator`` of the reconcile job on the Spark connection ``conn_id``; its task log
    shows the job's steps. When its arguments name Kafka topics, the job reads them first, with Spark's
    Kafka source by its Maven coordinates and the settings of the Kafka connection ``kafka_conn_id`` in
    its environment (never in its arguments, which the task log and ``ps`` show)."""

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "kafka_conn_id")

    def __init__(self, *, conn_id: str = "spark_default", kafka_conn_id: Any = None, **kwargs: Any) -> None:
        super().__init__(conn_id=conn_id, **kwargs)
        self.spark_conn_id = conn_id
        self.kafka_conn_id = kafka_conn_id

    def execute(self, context: Context) -> None:
        args = plans.reconcile_args(self.application_args or [])
        if args is not None and args.topics:
            from cdc_backfill.airflow.hooks import CdcKafkaHook
            from cdc_backfill.kafka.topics import KafkaError
            from cdc_backfill.spark.packages import kafka_source

            try:
                broker = CdcKafkaHook(plans.optional_text(self.kafka_conn_id) or plans.KAFKA_CONN_ID).broker()
            except KafkaError as exc:
                raise refuse(exc) from exc
            self.packages = ",".join(p for p in (self.packages, kafka_source()) if p)
            self.env_vars = {**(self.env_vars or {}), **broker.environ()}
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
