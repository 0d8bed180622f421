from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.airflow, pytest.mark.pg, pytest.mark.spark, pytest.mark.slow]


def test_cdc_doctor_runs_for_real_against_the_test_postgres(
    airflow_db: str,
    pg_server,
    monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
) -> None:
    """dag.test() runs the task in this process: a real Airflow run, real PostgreSQL and a real Spark job."""
    monkeypatch.setenv(
        "AIRFLOW_CONN_CDC_SOURCE",
        json.dumps(
            {
                "conn_type": "postgres",
                "host": pg_server.host,
                "port": pg_server.port,
                "login": pg_server.user,
                "schema": pg_server.database,
            }
        ),
    )
    from airflow.dag_processing.dagbag import DagBag

    from tests.airflow.conftest import DAGS

    dag = DagBag(dag_folder=str(DAGS / "cdc_doctor.py")).get_dag("cdc_doctor")
    run = dag.test(run_conf={"source_conn_id": "cdc_source"})
    assert run.state == "success"
    [ti] = run.get_task_instances()
    assert ti.state == "success"
