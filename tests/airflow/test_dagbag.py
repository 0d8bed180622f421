"""Every DAG file imports without errors, and without touching the network or a database at import."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

pytestmark = pytest.mark.airflow

DAGS = Path(__file__).resolve().parents[2] / "dags"


def test_every_dag_file_imports_cleanly_and_offline(airflow_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.dag_processing.dagbag import DagBag

    def no_network(self: socket.socket, address: object) -> None:
        raise AssertionError(f"a DAG file opened a connection at import time: {address}")

    # Connections made while the files are parsed are refused. The metadata DB (SQLite) is a file,
    # not a socket, and DagBag does not need it to parse.
    monkeypatch.setattr(socket.socket, "connect", no_network)
    bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}
    assert "cdc_doctor" in bag.dag_ids
    for dag_id in bag.dag_ids:
        assert "cdc_backfill" in bag.dags[dag_id].tags, f"{dag_id} lacks the cdc_backfill tag"
