"""Airflow test helpers: connections as environment variables, DAGs loaded from the real dags/ folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

DAGS = Path(__file__).resolve().parents[2] / "dags"


def conn_env(url: str) -> str:
    """An Airflow connection (JSON form) for a SQLAlchemy URL of the test PostgreSQL."""
    u = make_url(url)
    conn = {
        "conn_type": "postgres",
        "host": u.host,
        "port": u.port,
        "login": u.username,
        "schema": u.database,
    }
    if u.password:
        conn["password"] = u.password
    return json.dumps(conn)


@pytest.fixture
def source_conn(fresh_db: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """``cdc_source`` pointing at this test's database, and a local Spark for spark_default."""
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", conn_env(fresh_db))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    return "cdc_source"


def load_dag(dag_id: str, file: str):  # type: ignore[no-untyped-def]
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS / file))
    assert bag.import_errors == {}
    dag = bag.get_dag(dag_id)
    assert dag is not None, f"{dag_id} not in {file}: {bag.dag_ids}"
    return dag
