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


def test_a_small_reconcile_task_runs_its_driver_with_the_first_compiler_only(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from cdc_backfill.airflow import plans
    from cdc_backfill.airflow.operators.base import prepare_runtime
    from cdc_backfill.airflow.operators.reconcile import CdcReconcileOperator
    from cdc_backfill.reconcile import run_size
    from cdc_backfill.spark.log4j import FIRST_COMPILER_ONLY

    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "")  # put back as it was after the test
    monkeypatch.delenv("SPARK_SUBMIT_OPTS")
    monkeypatch.delenv(DRIVER_JAVA_OPTIONS_ENV, raising=False)
    (tmp_path / "lake").mkdir()  # nothing landed: the smallest run
    application, args = plans.reconcile_submit(
        str(tmp_path / "lake"), str(tmp_path / "state"), [], "public.sig"
    )
    task = CdcReconcileOperator(task_id="reconcile", application=application, application_args=args)
    assert task._small()
    with_json = CdcReconcileOperator(
        task_id="r2", application=application, application_args=[*args, "--ingest"]
    )
    (tmp_path / "lake" / "stream").mkdir()
    (tmp_path / "lake" / "stream" / "batch.jsonl").write_bytes(b"x" * 1000)
    assert with_json._small()  # its JSON counted by its bytes
    monkeypatch.setattr(run_size, "SMALL_INGEST_BYTES", 999)
    assert not with_json._small()
    other = CdcReconcileOperator(task_id="r3", application=application, application_args=["--verbose"])
    assert not other._small()  # arguments the project did not give: both compilers
    prepare_runtime(first_compiler_only=True)
    assert os.environ["SPARK_SUBMIT_OPTS"] == driver_java_options(True)
    assert FIRST_COMPILER_ONLY in os.environ["SPARK_SUBMIT_OPTS"]
