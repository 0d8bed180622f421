"""Airflow test helpers: connections as environment variables, DAGs loaded from the real dags/ folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdc_backfill.standalone import airflow_connection

DAGS = Path(__file__).resolve().parents[2] / "dags"


def conn_env(url: str) -> str:
    """An Airflow connection (JSON form) for a SQLAlchemy URL of the test PostgreSQL."""
    return airflow_connection(url)


@pytest.fixture
def source_conn(fresh_db: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """``cdc_source`` pointing at this test's database, and a local Spark for spark_default."""
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", conn_env(fresh_db))
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    return "cdc_source"


def kafka_conn(bootstrap: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """An Airflow connection of the Kafka provider's type, as its UI or ``airflow connections add``
    writes one: librdkafka's settings in the extra."""
    conn_id = "kafka_test"
    conn = {"conn_type": "kafka", "extra": {"bootstrap.servers": bootstrap, "group.id": "ignored"}}
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))
    return conn_id


def load_dag(dag_id: str, file: str):  # type: ignore[no-untyped-def]
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS / file))
    assert bag.import_errors == {}
    dag = bag.get_dag(dag_id)
    assert dag is not None, f"{dag_id} not in {file}: {bag.dag_ids}"
    return dag
