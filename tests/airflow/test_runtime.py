"""What a task that starts Java or Spark sets in its worker before it runs (operators.base)."""

from __future__ import annotations

import os

import pytest

from cdc_backfill.spark.log4j import DRIVER_JAVA_OPTIONS_ENV, driver_java_options

pytestmark = pytest.mark.airflow


def test_a_spark_task_gives_its_driver_the_projects_options_then_the_users(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cdc_backfill.airflow.operators.base import prepare_runtime

    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "")  # put back as it was after the test
    monkeypatch.delenv("SPARK_SUBMIT_OPTS")
    monkeypatch.setenv(DRIVER_JAVA_OPTIONS_ENV, "-Xss4m")
    prepare_runtime()
    options = os.environ["SPARK_SUBMIT_OPTS"]  # spark-submit gives these to the driver in client mode
    assert options == driver_java_options() and options.endswith(" -Xss4m"), options
    assert "-Dlog4j2.configurationFile=" in options


def test_options_set_in_the_worker_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    from cdc_backfill.airflow.operators.base import prepare_runtime

    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dmine=1")
    prepare_runtime()
    assert os.environ["SPARK_SUBMIT_OPTS"] == "-Dmine=1"


@pytest.mark.parametrize(("capture", "ingest"), [("drain", False), ("debezium", True), ("external", True)])
def test_the_reconcile_task_makes_its_job_from_its_rendered_fields(
    monkeypatch: pytest.MonkeyPatch, capture: str, ingest: bool
) -> None:
    """The DAG hands the task the landing, the state, the collections (a template renders them as text)
    and the form's capture; the task makes the job's arguments from them, as the CLI does."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from cdc_backfill.airflow import plans
    from cdc_backfill.airflow.operators.reconcile import CdcReconcileOperator

    submitted: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(
        SparkSubmitOperator, "execute", lambda self, context: submitted.append((self.application, self.application_args))
    )  # fmt: skip
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-Dmine=1")  # kept: nothing else of the runtime changes here
    task = CdcReconcileOperator(
        task_id="reconcile", landing_dir="lake", state_dir="state",
        collections="['public.orders', 'public.lines']", signal_table="public.sig", capture=capture,
    )  # fmt: skip
    task.execute({})  # type: ignore[arg-type]
    expected = plans.reconcile_submit(
        "lake", "state", ["public.orders", "public.lines"], "public.sig", ingest
    )
    assert submitted == [expected]
    assert ("--ingest" in submitted[0][1]) is ingest


def test_a_small_reconcile_task_runs_its_driver_with_the_first_compiler_only(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The task counts its run's rows from its own fields, as the CLI does (``reconcile.run_size``)."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from cdc_backfill.airflow.operators.reconcile import CdcReconcileOperator
    from cdc_backfill.reconcile import run_size
    from cdc_backfill.spark.log4j import FIRST_COMPILER_ONLY

    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, context: None)
    monkeypatch.delenv(DRIVER_JAVA_OPTIONS_ENV, raising=False)
    (tmp_path / "lake").mkdir()  # nothing landed: the smallest run

    def driver_options(capture: str) -> str:
        monkeypatch.setenv("SPARK_SUBMIT_OPTS", "")  # put back as it was after the test
        monkeypatch.delenv("SPARK_SUBMIT_OPTS")
        task = CdcReconcileOperator(
            task_id="reconcile", landing_dir=str(tmp_path / "lake"), state_dir=str(tmp_path / "state"),
            capture=capture,
        )  # fmt: skip
        task.execute({})  # type: ignore[arg-type]
        return os.environ["SPARK_SUBMIT_OPTS"]

    assert FIRST_COMPILER_ONLY in driver_options("drain").split()
    (tmp_path / "lake" / "stream").mkdir()
    (tmp_path / "lake" / "stream" / "batch.jsonl").write_bytes(b"x" * 1000)
    assert FIRST_COMPILER_ONLY in driver_options("debezium").split()  # its JSON counted by its bytes
    monkeypatch.setattr(run_size, "SMALL_INGEST_BYTES", 999)
    assert FIRST_COMPILER_ONLY not in driver_options("debezium").split()
