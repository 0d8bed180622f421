"""An empty table's snapshot, or a condition that selects nothing, gives an empty state: the signal, the
engine and the capture as a user types them, the reconcile and verify in the test session's Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.support.cli import cli, in_process, ok, snapshot_as_typed
from tests.support.pg import plain_url, sql
from tests.support.runs import reconcile_here
from tests.support.state import state_files, state_version

pytestmark = [pytest.mark.pg, pytest.mark.spark, pytest.mark.slow]


def test_an_empty_table_and_a_condition_that_selects_nothing_give_empty_states(
    spark, fresh_db: str, tmp_path: Path, monkeypatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    url = plain_url(fresh_db)
    src = ("--source", url)
    sql(
        fresh_db,
        "CREATE TABLE nothing (id int PRIMARY KEY, v text)",
        "CREATE TABLE few (id int PRIMARY KEY, v text)",
        "INSERT INTO few SELECT i, 'v' FROM generate_series(1, 50) i",
    )
    snapshot_as_typed(
        tmp_path,
        url,
        ["--collections", "public.nothing"],
        ["--collections", "public.few", "--condition", "id < 0"],
    )
    summary = reconcile_here(spark, tmp_path / "lake", tmp_path / "state")
    for coll in ("public.nothing", "public.few"):
        assert summary["collections"][coll]["rows"] == 0, summary["collections"].get(coll)
        assert sum(pq.read_table(f).num_rows for f in state_files(tmp_path / "state", coll)) == 0
    monkeypatch.chdir(tmp_path)
    out = ok(in_process(capsys, "verify", *src, "--state", "state", "--collection", "public.nothing"))
    assert "every range equal" in out

    # nothing new since: the reconcile says so without Spark and writes no version
    versions = state_version(tmp_path / "state", "public.few").version
    again = cli(tmp_path, "reconcile", "--landing", "lake", "--state", "state")
    assert json.loads(ok(again)) == {"events": 0, "collections": {}, "nothing_new": True}
    assert "nothing new in lake since the state's position: no version written" in again.stderr
    assert state_version(tmp_path / "state", "public.few").version == versions
    sql(fresh_db, "INSERT INTO few VALUES (-1, 'new')")  # something new: the reconcile runs
    ok(cli(tmp_path, "capture", "postgres", *src, "--landing", "lake", "--drain"))
    summary = reconcile_here(spark, tmp_path / "lake", tmp_path / "state")
    assert summary["collections"]["public.few"]["rows"] == 1
