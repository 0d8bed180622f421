"""cdc_incremental_snapshot under dag.test(): real PostgreSQL with writers running during the snapshot,
spark-submit of the reconcile on local Spark, and verify finding the state equal to the source."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.airflow.conftest import load_dag
from tests.support.judge import assert_state_is_source, overlap
from tests.support.pg import InWindow
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.airflow, pytest.mark.pg, pytest.mark.spark, pytest.mark.slow]

TABLES = ("public.orders", "public.lines")


def test_snapshot_dag_with_writers_ends_with_verify_equal(
    airflow_db: str, fresh_db: str, source_conn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cdc_backfill.airflow.engine import ScopedSnapshotEngine
    from cdc_backfill.airflow.operators import CdcCaptureDrainOperator

    seed(fresh_db, orders=400, lines=400)
    writers = Writers(fresh_db, seed_value=8).start()
    drain_execute = CdcCaptureDrainOperator.execute
    engine_init = ScopedSnapshotEngine.__init__

    def stop_writers_then_drain(self, context):  # type: ignore[no-untyped-def]
        # the writers run through validate, signal and every chunk; they stop before the final drain so
        # that the source holds still for verify
        writers.stop()
        return drain_execute(self, context)

    def writers_in_every_window(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        # each snapshot task's engine waits inside every window for a writer's change: the overlap is
        # certain on any machine, not a matter of how many changes fit into the snapshot
        engine_init(self, *args, **kwargs)
        self.window_hook = InWindow(fresh_db, action=None, writers=writers)

    monkeypatch.setattr(CdcCaptureDrainOperator, "execute", stop_writers_then_drain)
    monkeypatch.setattr(ScopedSnapshotEngine, "__init__", writers_in_every_window)
    landing, state = tmp_path / "lake", tmp_path / "state"
    dag = load_dag("cdc_incremental_snapshot", "cdc_incremental_snapshot.py")
    try:
        run = dag.test(
            run_conf={
                "collections": ["public\\.orders", "public\\.lines"],
                "chunk_size": 37,
                "readers": 2,
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
    assert states == {
        ("validate", -1): "success",
        ("signal", -1): "success",
        ("snapshot", 0): "success",
        ("snapshot", 1): "success",
        ("drain", -1): "success",
        ("wait_for_stream", -1): "success",
        ("reconcile", -1): "success",
        ("reread", -1): "success",  # nothing to re-read: it sends no signal
        ("verify", -1): "success",  # verify fails the task when any range differs
    }
    seen = overlap(fresh_db, landing, (*TABLES, "public.words"))  # the writers change words too
    assert seen.windows and seen.windows_with_changes == seen.windows, "writers changed rows in every window"
    for coll in TABLES:
        assert len(list((landing / "snapshots" / coll).glob("*.parquet"))) > 400 // 37
    assert_state_is_source(fresh_db, state, TABLES)


def test_a_conf_that_breaks_a_param_schema_is_refused_before_any_task(airflow_db: str) -> None:
    from airflow.sdk.exceptions import ParamValidationError

    dag = load_dag("cdc_incremental_snapshot", "cdc_incremental_snapshot.py")
    for conf in (
        {"collections": ["public\\.orders"], "chunk_size": 0},
        {"collections": []},
        {"collections": ["public\\.orders"], "engine": "flink"},
        {"chunk_size": 10},  # collections has no default: it must be given
    ):
        with pytest.raises(ParamValidationError):
            dag.test(run_conf=conf)
