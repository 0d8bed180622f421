"""cdc_incremental_snapshot with ``engine = debezium`` and ``capture = debezium`` under dag.test(): the
DAG sends the signal, Debezium's real PostgreSQL connector (embedded, in the task's process) reads the
chunks while writers change the tables, the drain follows Debezium's notifications to the snapshot's end
and drains, the reconcile ingests the batches and rebuilds the state, verify finds it equal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.airflow.conftest import load_dag
from tests.support.debezium import require_engine, run_until_a_chunk
from tests.support.judge import assert_state_is_source, overlap
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.airflow, pytest.mark.pg, pytest.mark.spark, pytest.mark.slow, pytest.mark.debezium]

TABLES = ("public.orders", "public.lines")
ALL = (*TABLES, "public.words")  # the writers change words too; Debezium captures every table
CHANGES = 30  # rows the writers change while Debezium is stopped in the middle of its snapshot


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
        run = dag.test(
            run_conf={
                "collections": ["public\\.orders", "public\\.lines"],
                "engine": "debezium",
                "capture": "debezium",
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
    assert states[("drain", -1)] == "success" and states[("verify", -1)] == "success", states
    assert followed and list(followed[0].values()) == ["COMPLETED"], followed
    assert overlap(fresh_db, landing, ALL).changes_in_span >= CHANGES, "the writers changed rows mid-snapshot"
    assert_state_is_source(fresh_db, state, TABLES)
