"""Capture against a real PostgreSQL: the order it lands in, the tables it refuses, its status."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from cdc_backfill.capture.postgres.loop import CaptureError, PostgresCapture, capture_status
from tests.support.capture import landed_rows, run_capture
from tests.support.pg import sql

pytestmark = pytest.mark.pg


def test_signal_row_lands_at_its_commit_position(fresh_db: str, tmp_path: Path) -> None:
    sql(fresh_db, "CREATE TABLE a (id int PRIMARY KEY)")
    landing = tmp_path / "landing"
    PostgresCapture(fresh_db, landing).run()
    engine = sa.create_engine(fresh_db)
    t1, t2 = engine.connect(), engine.connect()
    t1.begin()
    t2.begin()
    t1.execute(sa.text("INSERT INTO a VALUES (1)"))  # first written ...
    t2.execute(sa.text("INSERT INTO a VALUES (2)"))
    t2.commit()  # ... but T2 commits first
    sql(fresh_db, "INSERT INTO public.cdc_signal VALUES ('w1-open', 'snapshot-window-open', NULL)")
    t1.execute(sa.text("INSERT INTO a VALUES (3)"))
    t1.commit()
    t1.close()
    t2.close()
    engine.dispose()
    assert run_capture(fresh_db, landing).returncode == 0
    order = [(r["collection"], r["id"]) for r in landed_rows(landing)]  # in position order
    assert order == [("public.a", 2), ("public.cdc_signal", "w1-open"), ("public.a", 1), ("public.a", 3)]


def test_keyless_tables_are_refused_or_left_out(fresh_db: str, tmp_path: Path) -> None:
    sql(fresh_db, "CREATE TABLE keyed (id int PRIMARY KEY)", "CREATE TABLE loose (v int)")
    with pytest.raises(CaptureError, match=r"public\.loose has no primary key and REPLICA IDENTITY DEFAULT"):
        PostgresCapture(fresh_db, tmp_path, collections=["public\\.loose"]).setup()
    warnings = PostgresCapture(fresh_db, tmp_path).setup()
    assert any("public.loose" in w for w in warnings)
    sql(fresh_db, "UPDATE loose SET v = 1")  # would fail if the table had been published
    res = run_capture(fresh_db, tmp_path, "--collections", "public.nothing")
    assert res.returncode == 2
    assert "--collections 'public.nothing' matches no table" in res.stderr
    res = run_capture(fresh_db, tmp_path, "--tables", "public.nothing")  # not an option: argparse says so
    assert res.returncode == 2 and "unrecognized arguments: --tables" in res.stderr


def test_status_reports_lag_and_files(fresh_db: str, tmp_path: Path) -> None:
    sql(fresh_db, "CREATE TABLE s (id int PRIMARY KEY)")
    PostgresCapture(fresh_db, tmp_path).run()
    sql(fresh_db, "INSERT INTO s SELECT generate_series(1, 1000)")
    before = capture_status(fresh_db, tmp_path)
    assert before["exists"]
    assert before["lag_bytes"] > 0
    assert run_capture(fresh_db, tmp_path).returncode == 0
    after = capture_status(fresh_db, tmp_path)
    assert after["files"] == 1
    assert after["landed_position"][0] > 0
    assert after["lag_bytes"] < before["lag_bytes"]
