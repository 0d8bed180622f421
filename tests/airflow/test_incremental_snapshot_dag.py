"""cdc_incremental_snapshot under dag.test(): real PostgreSQL with writers running throughout (the
snapshot, the reconcile, verify), spark-submit of the reconcile on local Spark, and verify finding the
state equal to the source at one position; the same verify task names the range of a row changed by hand."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdc_backfill.state.table import table_uri
from tests.airflow.conftest import load_dag
from tests.support.cli import cli, ok
from tests.support.judge import assert_state_is_source, overlap
from tests.support.pg import plain_url, sql, writers_in_every_window
from tests.support.tamper import corrupt_one_row
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.airflow, pytest.mark.pg, pytest.mark.spark, pytest.mark.slow]

TABLES = ("public.orders", "public.lines")
QUIET = 10_000_000  # a key no writer touches (writers keep to ids up to 8,000; its doc is NULL)


# the lake on local disk, and on the S3 server (the form's landing and state as s3:// URIs)
@pytest.mark.parametrize("lake", ["local", "s3"], indirect=True)
def test_snapshot_dag_with_writers_ends_with_verify_equal(
    airflow_db: str,
    fresh_db: str,
    source_conn: str,
    lake,
    spark,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # type: ignore[no-untyped-def]
    from airflow.sdk.exceptions import AirflowFailException

    from cdc_backfill.airflow.operators import CdcVerifyOperator

    seed(fresh_db, orders=400, lines=400)
    sql(fresh_db, f"INSERT INTO orders VALUES ({QUIET}, 'quiet', 1, NULL)")
    writers = Writers(fresh_db, seed_value=8).start()
    verify_execute = CdcVerifyOperator.execute

    def verify_while_writing(self, context):  # type: ignore[no-untyped-def]
        writers.wait_for_changes(20)  # the source has moved on since the reconcile's position
        return verify_execute(self, context)

    monkeypatch.setattr(CdcVerifyOperator, "execute", verify_while_writing)
    writers_in_every_window(monkeypatch, fresh_db, writers)
    landing, state = lake / "lake", lake / "state"
    # as a user types them: relative folders beside them, or the s3:// URIs
    typed = ("lake", "state") if isinstance(landing, Path) else (str(landing), str(state))
    dag = load_dag("cdc_incremental_snapshot", "cdc_incremental_snapshot.py")
    try:
        run = dag.test(
            run_conf={
                "collections": ["public\\.orders", "public\\.lines"],
                "chunk_size": 37,
                "readers": 2,
                "chunk_compression": "zstd",  # on local disk "auto" would land them uncompressed
                "source_conn_id": source_conn,
                "landing_dir": str(landing),
                "state_dir": str(state),
                "verify": True,
            }
        )
        states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}
        assert run.state == "success", states
        # each collection's state is an asset a user's DAG can be scheduled on, named by its URI
        assert state_asset_events(dag.dag_id, run.run_id) == {
            table_uri(state, c): c for c in ("public.orders", "public.lines")
        }
        if isinstance(landing, Path):  # the form's compression reached the engine
            chunks = sorted((landing / "snapshots").rglob("*.parquet"))
            assert chunks and {
                pq.ParquetFile(c).metadata.row_group(0).column(0).compression for c in chunks
            } == {"ZSTD"}
        # the verify task again, writers still running, after one row of the state was changed by hand
        corrupt_one_row(state, "public.orders", QUIET)
        writers.wait_for_changes(20)
        task = CdcVerifyOperator(
            task_id="verify_again", collections=list(TABLES), state_dir=str(state), landing_dir=str(landing),
            source_conn_id=source_conn,
        )  # fmt: skip
        with pytest.raises(AirflowFailException) as failed:
            verify_execute(task, {})
    finally:
        writers.stop()
    message = str(failed.value)
    assert message.startswith("the state differs from the source: public.orders at position "), message
    assert "public.lines" not in message and "ranges [15]" in message, message  # the quiet key's range
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
    # the writers stopped: a drain and a reconcile as typed, then every row compared by the judge
    corrupt_one_row(state, "public.orders", QUIET, status="quiet")  # put right by hand: a reconcile keeps it
    url = plain_url(fresh_db)
    ok(
        cli(
            lake if isinstance(lake, Path) else tmp_path,
            "capture",
            "postgres",
            "--source",
            url,
            "--landing",
            typed[0],
            "--drain",
        )
    )
    ok(
        cli(
            lake if isinstance(lake, Path) else tmp_path,
            "reconcile",
            "--landing",
            typed[0],
            "--state",
            typed[1],
        )
    )
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


def test_a_refused_trigger_fails_validate_with_one_line_and_no_traceback(
    airflow_db: str, fresh_db: str, source_conn: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    seed(fresh_db, orders=10, lines=10)
    dag = load_dag("cdc_incremental_snapshot", "cdc_incremental_snapshot.py")
    run = dag.test(
        run_conf={
            "collections": ["public\\.nope"],
            "source_conn_id": source_conn,
            "landing_dir": str(tmp_path / "lake"),
            "state_dir": str(tmp_path / "state"),
        }
    )
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == "failed" and states["validate"] == "failed", states
    out = capfd.readouterr()
    log = out.out + out.err
    line = next(line for line in log.splitlines() if "refused: " in line)
    assert "matches no table in the source" in line and "did you mean public.lines, public.orders" in line
    assert "Traceback" not in log, log[-3000:]


def state_asset_events(dag_id: str, run_id: str) -> dict[str, str]:
    """The asset events a run recorded: asset URI -> the collection its extra names (rows counted)."""
    from airflow.models.asset import AssetEvent
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        events = session.scalars(
            select(AssetEvent).where(AssetEvent.source_dag_id == dag_id, AssetEvent.source_run_id == run_id)
        ).all()
        assert all(e.extra["rows"] > 0 for e in events), [e.extra for e in events]
        return {e.asset.uri: e.extra["collection"] for e in events}
