"""Every DAG file imports without errors, and without touching the network or a database at import."""

from __future__ import annotations

import itertools
import socket
from pathlib import Path

import pytest

from tests.airflow.conftest import DAGS

pytestmark = pytest.mark.airflow


def test_every_dag_file_imports_cleanly_and_offline(airflow_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.dag_processing.dagbag import DagBag

    def no_network(self: socket.socket, address: object) -> None:
        raise AssertionError(f"a DAG file opened a connection at import time: {address}")

    # Connections made while the files are parsed are refused. The metadata DB (SQLite) is a file,
    # not a socket, and DagBag does not need it to parse.
    monkeypatch.setattr(socket.socket, "connect", no_network)
    bag = DagBag(dag_folder=str(DAGS))
    assert bag.import_errors == {}
    assert set(bag.dag_ids) >= {
        "cdc_doctor",
        "cdc_incremental_snapshot",
        "cdc_stop_snapshot",
        "cdc_capture_postgres",
    }
    # the example schedules file is not loaded as it is: no scheduled backfill fails out of the box
    assert not [d for d in bag.dag_ids if d.startswith("cdc_scheduled_backfill__")]
    for dag_id in bag.dag_ids:
        assert "cdc_backfill" in bag.dags[dag_id].tags, f"{dag_id} lacks the cdc_backfill tag"


def test_the_snapshot_dag_is_wired_and_its_form_is_described(airflow_db: str) -> None:
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=str(DAGS / "cdc_incremental_snapshot.py")).get_dag("cdc_incremental_snapshot")
    order = ["validate", "signal", "snapshot", "drain", "wait_for_stream", "reconcile", "reread", "verify"]
    for before, after in itertools.pairwise(order):
        assert before in dag.get_task(after).upstream_task_ids, (before, after)
    # after the snapshot only the previous step is upstream: a fully stopped snapshot skips the rest
    assert dag.get_task("drain").upstream_task_ids == {"snapshot"}
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    assert isinstance(dag.get_task("reconcile"), SparkSubmitOperator)
    assert dag.get_task("reconcile")._conn_id == "spark_default"
    assert dag.get_task("wait_for_stream").deferrable
    for name, param in dag.params.items():
        assert param.description and param.schema.get("type"), name
    assert set(dag.params) == {
        "collections", "condition", "surrogate_key", "chunk_size", "readers", "chunk_compression", "engine",
        "capture", "topics", "kafka_conn_id", "source_conn_id", "landing_dir", "state_dir", "verify",
    }  # fmt: skip


def test_a_broken_schedules_file_is_an_import_error_not_a_silent_gap(
    airflow_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.dag_processing.dagbag import DagBag

    broken = tmp_path / "schedules.toml"
    broken.write_text('[[backfill]]\nname = "x"\ncollections = []\n')
    monkeypatch.setenv("CDC_BACKFILL_SCHEDULES", str(broken))
    bag = DagBag(dag_folder=str(DAGS / "cdc_scheduled_backfill.py"))
    [error] = bag.import_errors.values()
    assert "collections must be a non-empty list" in error


def test_the_plugin_registers_the_progress_page() -> None:
    from cdc_backfill.airflow.plugin import CdcBackfillPlugin

    [app] = CdcBackfillPlugin.fastapi_apps
    assert app["url_prefix"] == "/cdc-backfill" and {r.path for r in app["app"].routes} >= {
        "/",
        "/api/progress",
    }
    [view] = CdcBackfillPlugin.external_views
    assert (
        view["href"] == "/cdc-backfill/"
        and view["destination"] == "nav"
        and not view["url_route"].startswith("/")
    )


# the fields a user must fill in each form; everything else has a default or may stay empty
REQUIRED = {"cdc_incremental_snapshot": {"collections"}}


def test_every_dag_is_described_and_asks_only_for_what_it_needs(airflow_db: str) -> None:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS))
    for dag_id in bag.dag_ids:
        dag = bag.dags[dag_id]
        assert dag.description, f"{dag_id} has no description for the DAG list"
        for name, param in dag.params.items():
            types = param.schema.get("type")
            optional = isinstance(types, list) and "null" in types
            # Airflow 3.3's form requires every field whose type does not admit null
            if param.value is None and not optional:
                assert name in REQUIRED.get(dag_id, set()), f"{dag_id}.{name} is required but has no default"
            if param.description.startswith("Optional"):
                assert optional, f"{dag_id}.{name} says Optional but the form would require it"
            # the form clamps to a top-level minimum/maximum without a word: ranges go inside allOf
            assert "minimum" not in param.schema and "maximum" not in param.schema, f"{dag_id}.{name}"


def test_a_list_of_collections_may_end_with_a_blank_line_but_not_be_blank(airflow_db: str) -> None:
    import jsonschema

    from cdc_backfill.airflow.params import snapshot_params

    schema = snapshot_params()["collections"].schema
    jsonschema.validate(["public\\.orders", ""], schema)  # pasted with a trailing newline
    for blank in ([], [""], ["   "]):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(blank, schema)
    chunk = snapshot_params()["chunk_size"].schema
    with pytest.raises(jsonschema.ValidationError, match="0 is less than the minimum of 1"):
        jsonschema.validate(0, chunk)


def test_the_example_schedules_file_gives_a_paused_dag(
    airflow_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("CDC_BACKFILL_SCHEDULES", str(DAGS / "cdc_scheduled_backfills.example.toml"))
    bag = DagBag(dag_folder=str(DAGS / "cdc_scheduled_backfill.py"))
    assert bag.import_errors == {}
    dag = bag.get_dag("cdc_scheduled_backfill__orders_daily")
    assert dag is not None and dag.is_paused_upon_creation is True
