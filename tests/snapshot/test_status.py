from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from cdc_backfill.cli import main
from cdc_backfill.snapshot.progress import RangeProgress
from cdc_backfill.snapshot.status import bar, render, summarize

T0 = dt.datetime(2026, 1, 1)
NOW = T0 + dt.timedelta(seconds=20)  # the ranges below were touched at most 20 s before


def rng(no: int, status: str, rows: int, est: int, secs: int) -> RangeProgress:
    return RangeProgress(
        "s",
        "public.t",
        no,
        status,
        None,
        None,
        None,
        rows // 10,
        rows,
        est,
        T0,
        T0 + dt.timedelta(seconds=secs),
        None,
    )


def test_summary_rate_and_time_left() -> None:
    [s] = summarize([rng(0, "done", 500, 500, 10), rng(1, "running", 250, 500, 10)], now=NOW)
    assert (s.status, s.rows, s.rows_estimate, s.ranges) == ("running", 750, 1000, 2)
    assert s.rate == pytest.approx(75.0)
    assert s.seconds_left == pytest.approx(250 / 75)
    assert "75.0%" in render([s])
    assert bar(0, 0).endswith("100.0%")


@pytest.mark.pg
def test_status_command_against_a_real_run(
    fresh_db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.pg import eager_engine as engine
    from tests.support.pg import send_as as send
    from tests.support.pg import sql

    sql(fresh_db, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t SELECT generate_series(1, 100)")
    assert main(["snapshot", "status", "--source", fresh_db]) == 2  # no signal tables: `signal init` first
    assert "run `cdc-backfill signal init` on this source first" in capsys.readouterr().err
    assert main(["signal", "init", "--source", fresh_db]) == 0
    assert main(["snapshot", "status", "--source", fresh_db]) == 0
    assert "no snapshots yet" in capsys.readouterr().out
    send(fresh_db, "s1", "public.t", chunk_size=30)
    engine(fresh_db, tmp_path).run()
    assert main(["snapshot", "status", "--source", fresh_db, "--json"]) == 0
    [status] = json.loads(capsys.readouterr().out)
    assert (status["collection"], status["status"], status["rows"], status["chunks"]) == (
        "public.t",
        "done",
        100,
        4,
    )


@pytest.mark.parametrize(
    ("statuses", "paused", "want"),
    [
        (["done", "done"], False, "done"),
        (["failed", "running"], False, "running"),  # one range failed while another runs: still going
        (["failed", "done"], False, "failed"),
        (["stopped", "done"], False, "stopped"),
        (["failed", "stopped"], False, "failed"),
        (["pending", "pending"], False, "pending"),
        (["done", "pending"], False, "running"),
        (["running", "pending"], True, "paused"),
        (["done", "done"], True, "done"),  # a pause after the last chunk changes nothing
    ],
)
def test_cli_airflow_and_progress_page_say_the_same_status(
    statuses: list[str], paused: bool, want: str
) -> None:
    from cdc_backfill.airflow.plans import collection_outcome
    from cdc_backfill.airflow.progress_app import as_rows

    ranges = [rng(i, s, 0, 100, 10) for i, s in enumerate(statuses)]
    cli = summarize(ranges, paused={"s"} if paused else set(), now=NOW)  # `snapshot status` and the demo
    airflow = collection_outcome(ranges, paused=paused)  # the snapshot tasks and the stop DAG
    page = as_rows(cli)  # the progress page
    assert cli[0].status == airflow.status == page[0]["status"] == want


def test_a_finished_collection_shows_whole_whatever_its_estimate() -> None:
    # a condition selected 444 of the table's ~1000 estimated rows: done is done
    [s] = summarize([rng(0, "done", 444, 1000, 10)])
    assert s.status == "done" and "100.0%" in render([s]) and "44.4%" not in render([s])


def test_a_collection_nobody_reads_any_more_is_interrupted() -> None:
    ranges = [rng(0, "done", 500, 500, 10), rng(1, "running", 250, 500, 10)]
    [s] = summarize(ranges, now=T0 + dt.timedelta(seconds=10 + 61))  # no heartbeat for 61 s
    assert s.status == "interrupted" and s.seconds_left is None
    assert "its engine stopped; `cdc-backfill snapshot run` goes on from the last chunk" in (s.reason or "")
    [s] = summarize(ranges, now=T0 + dt.timedelta(seconds=10 + 59))
    assert s.status == "running"
