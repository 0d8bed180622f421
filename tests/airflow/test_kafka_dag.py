"""cdc_incremental_snapshot with ``capture = kafka`` under dag.test(): Debezium's PostgreSQL connector in
a real Kafka Connect worker streams the tables and the signal table to a real broker while writers
change the tables during the snapshot. The wait is the deferrable one on the topics (the snapshot's
end, then a marker through them); the reconcile job reads the topics and rebuilds the state; verify
finds it equal.

Debezium's own incremental snapshot reads the chunks: the wait first takes its COMPLETED from the
notification topic, then sees its marker through the topics, the wait every engine has. The project's
engine over topics is the Kafka torture test's (tests/torture/test_torture_kafka.py), without Airflow.

The broker's settings come from an Airflow connection of the Kafka provider's type.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.airflow.conftest import kafka_conn, load_dag
from tests.support.judge import assert_state_is_source
from tests.support.kafka import unique_name
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.airflow, pytest.mark.pg, pytest.mark.spark, pytest.mark.slow, pytest.mark.kafka]

TABLES = ("public.orders", "public.lines")
ALL = (*TABLES, "public.words")  # the writers change words too


def test_kafka_capture_dag_with_writers_ends_with_verify_equal(
    airflow_db: str,
    fresh_db: str,
    source_conn: str,
    kafka_broker,
    start_connect,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # type: ignore[no-untyped-def]
    from cdc_backfill.airflow.hooks import CdcSourceHook
    from cdc_backfill.signals.store import SignalStore

    seed(fresh_db, orders=600, lines=600, docs_every=10**9)  # no TOASTed docs: nothing to re-read
    SignalStore(fresh_db).init()
    prefix = unique_name("dag").replace("-", "_")
    start_connect(fresh_db, list(ALL), prefix=prefix, engine="debezium", chunk_size=50)
    writers = Writers(fresh_db, seed_value=12).start()
    markers: list[str] = []
    write_marker = CdcSourceHook.write_marker

    def quiet_then_marker(self):  # type: ignore[no-untyped-def]
        # the wait's marker: the writers stop first, so that verify compares a source that holds still
        writers.wait_for_changes(20)
        writers.stop()
        marked = write_marker(self)
        markers.append(marked)
        return marked

    monkeypatch.setattr(CdcSourceHook, "write_marker", quiet_then_marker)
    landing, state = tmp_path / "lake", tmp_path / "state"
    dag = load_dag("cdc_incremental_snapshot", "cdc_incremental_snapshot.py")
    try:
        run = dag.test(
            run_conf={
                "collections": ["public\\.orders", "public\\.lines"],
                "chunk_size": 41,
                "engine": "debezium",
                "capture": "kafka",
                "topics": f"{prefix}\\..*",
                "kafka_conn_id": kafka_conn(kafka_broker.bootstrap, monkeypatch),
                "source_conn_id": source_conn,
                "landing_dir": str(landing),
                "state_dir": str(state),
                "verify": True,
            }
        )
    finally:
        writers.stop()
    states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}
    assert run.state == "success", states
    assert states[("wait_for_stream", -1)] == "success" and states[("verify", -1)] == "success", states
    assert len(markers) == 1, "the wait committed one marker and saw it through the topics"
    assert writers.changes >= 20
    assert_state_is_source(fresh_db, state, TABLES)


def test_a_broker_that_cannot_be_reached_is_refused_before_anything_is_written(
    airflow_db: str,
    fresh_db: str,
    source_conn: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from cdc_backfill.kafka.process import free_port
    from cdc_backfill.signals.store import SignalStore

    seed(fresh_db, orders=10, lines=10)
    store = SignalStore(fresh_db)
    store.init()
    before = store.rows()
    dag = load_dag("cdc_incremental_snapshot", "cdc_incremental_snapshot.py")
    run = dag.test(
        run_conf={
            "collections": ["public\\.orders"],
            "capture": "kafka",
            "topics": "cdc\\..*",
            "kafka_conn_id": kafka_conn(f"127.0.0.1:{free_port()}", monkeypatch),
            "source_conn_id": source_conn,
            "landing_dir": str(tmp_path / "lake"),
            "state_dir": str(tmp_path / "state"),
        }
    )
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == "failed" and states["validate"] == "failed", states
    assert store.rows() == before, "no signal was written"
    out = capfd.readouterr()
    log = out.out + out.err
    line = next(line for line in log.splitlines() if "refused: " in line)
    assert "cannot reach the Kafka broker at 127.0.0.1:" in line, line
    assert "Traceback" not in log, log[-3000:]
