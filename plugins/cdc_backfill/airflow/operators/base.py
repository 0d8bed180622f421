"""What every operator of the project shares: the source hook, how a refusal fails a task, and the
runtime a Java or Spark task needs."""

from __future__ import annotations

import logging
import os
from typing import Any

from airflow.sdk import BaseOperator, Context

from cdc_backfill.airflow import plans
from cdc_backfill.airflow.hooks import CdcSourceHook

log = logging.getLogger(__name__)


def prepare_runtime(
    context: Context | None = None, spark_conn_id: str | None = None, first_compiler_only: bool = False
) -> None:
    """``pre_execute`` of tasks that start Java or Spark: the embedded defaults (JAVA_HOME, SPARK_HOME,
    the venv's bin on PATH for spark-submit) in the worker, without overwriting what is set; Spark's
    JVM log at WARN (the task log shows the job's own steps, not hundreds of INFO lines).
    ``first_compiler_only``: the job is known to be short (``reconcile.run_size``)."""
    from cdc_backfill.runtime import apply_defaults
    from cdc_backfill.spark.log4j import driver_java_options
    from cdc_backfill.spark.submit import submit_environ

    apply_defaults()
    # spark-submit adds SPARK_SUBMIT_OPTS to the driver's JVM in client mode
    os.environ.setdefault("SPARK_SUBMIT_OPTS", driver_java_options(first_compiler_only))
    # a local master binds to the loopback address and gets the CLI's driver heap, as `cdc-backfill
    # reconcile` does (spark.submit.submit_environ: else Spark warns twice in the task log that the host
    # name resolves to one, and the driver has spark-submit's 1g)
    if spark_conn_id and _spark_host(spark_conn_id).startswith("local"):
        os.environ.update(submit_environ("local", os.environ))


def _spark_host(conn_id: str) -> str:
    from airflow.sdk import BaseHook

    try:
        return str(BaseHook.get_connection(conn_id).host or "")
    except Exception:  # no such connection: spark-submit says so itself
        return ""


class Refused(SystemExit):
    """An expected refusal (a collection that matches no table, a bad condition, no source): the task
    fails with the product's one line. Airflow's task runner logs a SystemExit as that one line
    ("Task exited", its code) where any other exception gets a traceback the reason is buried in."""


def refuse(exc: Exception) -> Refused:
    """The refusal of ``exc``: its reason, one line, logged as it is (the runner's own line quotes it)."""
    message = f"refused: {exc}"
    log.error("%s", message)
    return Refused(message)


class CdcOperator(BaseOperator):
    ui_color = "#e8f4ea"

    def __init__(self, *, source_conn_id: str = "", signal_table: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source_conn_id = source_conn_id
        self.signal_table = signal_table

    def hook(self) -> CdcSourceHook:
        return CdcSourceHook(
            plans.optional_text(self.source_conn_id) or "", plans.optional_text(self.signal_table)
        )
