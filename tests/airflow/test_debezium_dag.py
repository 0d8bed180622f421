"""cdc_incremental_snapshot with ``engine = debezium`` under dag.test(), Debezium's real PostgreSQL
connector reading the chunks while writers change the tables:

- ``capture = debezium``: the connector runs embedded in the task's process; the drain follows Debezium's
  notifications to the snapshot's end and drains;
- ``capture = external``: the connector runs in another process's stead (a thread here) and its
  notifications land as a Kafka sink writes the notification topic, files in the landing's stream folder;
  the DAG's wait takes Debezium's word from there, with either watermarking.

The reconcile ingests the batches and rebuilds the state; verify finds it equal."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cdc_backfill.landing.layout import ingested_stream_dir, stream_dir
from tests.airflow.conftest import load_dag
from tests.support.debezium import require_engine, run_until_a_chunk
from tests.support.judge import assert_state_is_source, overlap
from tests.support.pg import plain_url
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.airflow, pytest.mark.pg, pytest.mark.spark, pytest.mark.slow, pytest.mark.debezium]

TABLES = ("public.orders", "public.lines")
ALL = (*TABLES, "public.words")  # the writers change words too; Debezium captures every table
CHANGES = 30  # rows the writers change while Debezium is stopped in the middle of its snapshot


# First in this file: Airflow replaces the SIGSEGV handler of a process that parses a DAG, which a JVM
# started before in the same process cannot survive. This test's Debezium runs in a process of its own;
# the next one starts the JVM in its task, after the parse.
@pytest.mark.parametrize("watermarking", ["insert_insert", "insert_delete"])
def test_debezium_landed_by_a_sink_dag_ends_with_verify_equal(
    airflow_db: str, fresh_db: str, source_conn: str, tmp_path: Path, watermarking: str
) -> None:
    from cdc_backfill.signals.store import SignalStore

    require_engine()
    seed(fresh_db, orders=1500, lines=1500, docs_every=10**9)  # no TOASTed docs: nothing to re-read
    SignalStore(fresh_db).init()
    landing, state = tmp_path / "lake", tmp_path / "state"

    def sink(phase: str) -> subprocess.Popen:  # type: ignore[type-arg]
        with open(tmp_path / "sink.log", "ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "tests.support.debezium_sink", phase, plain_url(fresh_db), str(landing),
                 watermarking, *ALL],
                cwd=Path(__file__).resolve().parents[2], stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip

    first = sink("first")
    rest: list[subprocess.Popen] = []  # type: ignore[type-arg]
    writers: Writers | None = None
    try:
        until(lambda: (tmp_path / "sink.ready").exists(), first, tmp_path, "the connector's slot")
        writers = Writers(fresh_db, seed_value=11).start()

        def restart() -> None:  # Debezium stopped after its first chunk while the writers change rows
            try:
                first.wait(300)
                writers.wait_for_changes(CHANGES)
            finally:  # whatever happened, the snapshot goes on (the DAG waits for it) and it is said below
                writers.stop()  # the source holds still for verify
                rest.append(sink("rest"))  # started again: the snapshot goes on from its offsets

        restarter = threading.Thread(target=restart, daemon=True)
        restarter.start()
        dag = load_dag("cdc_incremental_snapshot", "cdc_incremental_snapshot.py")
        run = run_debezium_dag(dag, "external", source_conn, landing, state)
        restarter.join(60)
    finally:
        if writers is not None:
            writers.stop()
        for process in (first, *rest):
            process.terminate()
            process.wait(120)
    assert first.returncode == 0, (tmp_path / "sink.log").read_text()[-3000:]
    assert not (tmp_path / "sink.ended").exists(), (
        "the snapshot ended before the stop: make the tables larger"
    )
    states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}
    assert run.state == "success", (states, (tmp_path / "sink.log").read_text()[-3000:])
    assert states[("wait_for_stream", -1)] == "success" and states[("verify", -1)] == "success", states
    sunk = [
        *stream_dir(landing).glob("*.notifications+0+*"),
        *ingested_stream_dir(landing).glob("*.notifications+0+*"),
    ]
    assert sunk, "Debezium's notifications landed as a sink's files"
    assert not (landing / "_debezium" / "notifications.jsonl").exists()
    assert overlap(fresh_db, landing, ALL).changes_in_span >= CHANGES, "the writers changed rows mid-snapshot"
    assert_state_is_source(fresh_db, state, TABLES)


def run_debezium_dag(dag, capture: str, source_conn: str, landing: Path, state: Path):  # type: ignore[no-untyped-def]
    """The form as a user fills it: orders and lines read by Debezium, the stream landed by ``capture``."""
    conf = {
        "collections": ["public\\.orders", "public\\.lines"],
        "engine": "debezium",
        "capture": capture,
        "source_conn_id": source_conn,
        "landing_dir": str(landing),
        "state_dir": str(state),
        "verify": True,
    }
    return dag.test(run_conf=conf)


def until(done, process: subprocess.Popen, folder: Path, what: str, limit_s: float = 180.0) -> None:  # type: ignore[no-untyped-def,type-arg]
    """Wait for ``done()`` while the sink process runs; fail with its log if it ends or takes too long."""
    give_up = time.monotonic() + limit_s
    while not done():
        if process.poll() is not None or time.monotonic() > give_up:
            log = (folder / "sink.log").read_text()[-3000:]
            raise AssertionError(f"the sink process never reached {what} (exit {process.poll()}):\n{log}")
        time.sleep(0.1)


def test_debezium_engine_dag_with_writers_ends_with_verify_equal(
    airflow_db: str, fresh_db: str, source_conn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cdc_backfill.airflow.hooks import CdcSourceHook
    from cdc_backfill.signals.store import SignalStore

    require_engine()
    seed(fresh_db, orders=1500, lines=1500, docs_every=10**9)  # no TOASTed docs: nothing to re-read
    SignalStore(fresh_db).init()
    writers = Writers(fresh_db, seed_value=9).start()
    drain = CdcSourceHook.debezium_drain
    followed: list[dict] = []

    def writers_until_the_snapshot_ends(self, landing, until=(), max_seconds=6 * 3600.0):  # type: ignore[no-untyped-def]
        if not until:
            return drain(self, landing, until, max_seconds)  # the signal task's: the slot before the signal
        # Debezium stopped after its first chunk (a worker lost) while the writers go on: their changes lie
        # between the snapshot's windows, whatever the machine's speed; then the task's own drain
        first = run_until_a_chunk(self.debezium_settings(landing), until[0])
        assert not first.snapshots, "the snapshot ended before the stop: make the tables larger"
        writers.wait_for_changes(CHANGES)
        ran = drain(self, landing, until, max_seconds)  # Debezium's snapshot, the writers still writing
        followed.append(dict(ran.snapshots))
        writers.stop()  # the source holds still for verify
        return drain(self, landing, (), max_seconds)

    monkeypatch.setattr(CdcSourceHook, "debezium_drain", writers_until_the_snapshot_ends)
    landing, state = tmp_path / "lake", tmp_path / "state"
    dag = load_dag("cdc_incremental_snapshot", "cdc_incremental_snapshot.py")
    try:
        run = run_debezium_dag(dag, "debezium", source_conn, landing, state)
    finally:
        writers.stop()
    states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}
    assert run.state == "success", states
    assert states[("drain", -1)] == "success" and states[("verify", -1)] == "success", states
    assert followed and list(followed[0].values()) == ["COMPLETED"], followed
    assert overlap(fresh_db, landing, ALL).changes_in_span >= CHANGES, "the writers changed rows mid-snapshot"
    assert_state_is_source(fresh_db, state, TABLES)
