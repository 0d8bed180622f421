"""The reconcile task: Airflow's spark-submit of the project's reconcile job, in the runtime the
project's Spark tasks need (Java, spark-submit on PATH, a local master on the loopback address)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, AssetAlias, Context

from cdc_backfill.airflow import plans
from cdc_backfill.airflow.operators.base import prepare_runtime, refuse
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE

# The outlet of every reconcile task: each run adds to it one asset event per collection whose state it
# wrote, the asset named by the state table's URI (``state.table.table_uri``), which a user's DAG can be
# scheduled on (``schedule=[Asset("file:///…/state/public.orders")]``). The collections are known only
# once the form is rendered, so the concrete assets come through this alias.
STATE_ASSETS = AssetAlias("cdc_backfill_state")


class CdcReconcileOperator(SparkSubmitOperator):
    """``SparkSubmitOperator`` of the reconcile job over ``landing_dir`` into ``state_dir`` on the Spark
    connection ``conn_id``; its task log shows the job's steps. ``capture`` is the form's: where it is
    ``debezium`` or ``external`` the job ingests the landing's JSON first; where it is ``kafka`` the job
    reads ``topics`` first, with Spark's Kafka source by its Maven coordinates and the settings of the
    Kafka connection ``kafka_conn_id`` in its environment (never in its arguments, which the task log
    and ``ps`` show)."""

    template_fields: Sequence[str] = (
        *SparkSubmitOperator.template_fields,
        "landing_dir",
        "state_dir",
        "collections",
        "signal_table",
        "capture",
        "topics",
        "kafka_conn_id",
    )

    def __init__(
        self,
        *,
        landing_dir: Any,
        state_dir: Any,
        collections: Any = (),
        signal_table: Any = DEFAULT_SIGNAL_TABLE,
        capture: Any = "drain",
        topics: Any = None,
        kafka_conn_id: Any = None,
        conn_id: str = "spark_default",
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("name", "cdc_backfill_reconcile")
        kwargs.setdefault("outlets", [STATE_ASSETS])
        # the job and its arguments are made from the fields above once they are rendered (``execute``)
        super().__init__(conn_id=conn_id, application="", **kwargs)
        self.spark_conn_id = conn_id
        self.landing_dir = landing_dir
        self.state_dir = state_dir
        self.collections = collections
        self.signal_table = signal_table
        self.capture = capture
        self.topics = topics
        self.kafka_conn_id = kafka_conn_id

    def execute(self, context: Context) -> None:
        capture = str(self.capture)
        topics = plans.optional_text(self.topics) if capture == "kafka" else None
        kafka = None
        if topics:
            from cdc_backfill.airflow.hooks import CdcKafkaHook
            from cdc_backfill.kafka.topics import KafkaError

            try:
                broker = CdcKafkaHook(plans.optional_text(self.kafka_conn_id) or plans.KAFKA_CONN_ID).broker()
            except KafkaError as exc:
                raise refuse(exc) from exc
            kafka = (broker.bootstrap, topics)
            self.env_vars = {**(self.env_vars or {}), **broker.environ()}
        landing, state, collections = (
            str(self.landing_dir),
            str(self.state_dir),
            plans.as_list(self.collections),
        )
        from cdc_backfill.spark.packages import ConnectorError, job_packages

        try:  # Spark's Kafka source, the s3a connector where the lake is on S3
            needed = job_packages([landing, state], kafka=kafka is not None)
        except ConnectorError as exc:
            raise refuse(exc) from exc
        self.packages = ",".join(p for p in (self.packages, *needed.coordinates) if p) or None
        self.exclude_packages = ",".join(p for p in (self.exclude_packages, *needed.excludes) if p) or None
        signal_table = plans.optional_text(self.signal_table) or DEFAULT_SIGNAL_TABLE
        ingest = plans.ingests_json(capture)
        self.application, self.application_args = plans.reconcile_submit(
            landing, state, collections, signal_table, ingest=ingest, kafka=kafka
        )
        from cdc_backfill.lakepath import lake_path
        from cdc_backfill.reconcile.run_size import first_compiler_only

        # a run that reads few rows starts its driver with the JIT's first compiler only, as the CLI's
        small = first_compiler_only(
            lake_path(landing),
            lake_path(state),
            collections,
            signal_table,
            ingest=ingest or kafka is not None,
        )
        prepare_runtime(context, spark_conn_id=self.spark_conn_id, first_compiler_only=small)
        from cdc_backfill.reconcile.runs import last_run

        before = last_run(lake_path(state))
        super().execute(context)
        after = last_run(lake_path(state))
        if after is not None and (before is None or after[0] != before[0]):
            written_states(context, state, after[1])


def written_states(context: Context, state: str, run: dict[str, Any]) -> None:
    """One asset event per collection the run wrote (``run``: its record), on the alias outlet."""
    from cdc_backfill.state.table import table_uri

    for collection, info in run.get("collections", {}).items():
        extra = {"collection": collection, "version": info.get("version"), "rows": info.get("rows")}
        context["outlet_events"][STATE_ASSETS].add(Asset(table_uri(state, collection)), extra=extra)
