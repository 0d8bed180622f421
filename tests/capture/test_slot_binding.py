"""A replication slot belongs to one landing zone: a typo in ``--landing`` is refused before the slot is
touched, and the real landing still receives every change; a second landing takes a slot of its own; a
moved landing keeps its slot; a landing whose slot is gone, or that streams another source, is refused."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdc_backfill.landing.layout import capture_log_files
from tests.support.cli import cli
from tests.support.pg import plain_url, sql

pytestmark = [pytest.mark.pg, pytest.mark.slow]


def capture(cwd: Path, url: str, landing: str, *extra: str):  # type: ignore[no-untyped-def]
    return cli(
        cwd, "capture", "postgres", "--source", plain_url(url), "--landing", landing, "--drain", *extra
    )


def statuses(landing: Path) -> list[str]:
    """The ``status`` values of public.t's events landed in the typed log, oldest first."""
    out = []
    for f in capture_log_files(landing):
        if "public.t" in str(f):
            out += [s for s in pq.read_table(f).column("status").to_pylist()]
    return out


def one_line_refusal(res, *words: str) -> str:  # type: ignore[no-untyped-def]
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def test_a_typo_in_landing_is_refused_and_the_real_landing_keeps_the_change(
    fresh_db: str, tmp_path: Path
) -> None:
    sql(fresh_db, "CREATE TABLE t (id int PRIMARY KEY, status text)", "INSERT INTO t VALUES (1, 'new')")
    assert capture(tmp_path, fresh_db, "lake").returncode == 0
    sql(fresh_db, "UPDATE t SET status = 'paid' WHERE id = 1")

    typo = capture(tmp_path, fresh_db, "lkae")
    line = one_line_refusal(typo, "slot cdc_backfill belongs to the landing zone", str(tmp_path / "lake"))
    assert f"--landing {tmp_path / 'lake'}" in line and "--slot NAME" in line
    assert not (tmp_path / "lkae").exists(), "a refused capture creates nothing"

    again = capture(tmp_path, fresh_db, "lake")
    assert again.returncode == 0, again.stderr
    assert statuses(tmp_path / "lake") == ["paid"], "the change went to the bound landing"

    # a second landing zone with a slot of its own gets the changes from its start on
    assert capture(tmp_path, fresh_db, "lkae", "--slot", "second").returncode == 0
    sql(fresh_db, "UPDATE t SET status = 'sent' WHERE id = 1")
    assert capture(tmp_path, fresh_db, "lkae", "--slot", "second").returncode == 0
    assert capture(tmp_path, fresh_db, "lake").returncode == 0
    assert statuses(tmp_path / "lkae") == ["sent"]
    assert statuses(tmp_path / "lake") == ["paid", "sent"]

    # a landing moved to another folder keeps its identity, and its slot
    (tmp_path / "lake").rename(tmp_path / "lake2")
    assert capture(tmp_path, fresh_db, "lake2").returncode == 0


def test_a_landing_whose_slot_is_gone_is_refused(fresh_db: str, tmp_path: Path) -> None:
    sql(fresh_db, "CREATE TABLE t (id int PRIMARY KEY, status text)")
    assert capture(tmp_path, fresh_db, "lake").returncode == 0
    sql(fresh_db, "SELECT pg_drop_replication_slot('cdc_backfill')", "INSERT INTO t VALUES (1, 'lost')")
    res = capture(tmp_path, fresh_db, "lake")
    one_line_refusal(res, "the replication slot cdc_backfill is gone", "lost to the stream")
    # a new landing zone takes the free name
    assert capture(tmp_path, fresh_db, "fresh").returncode == 0


def test_a_landing_of_another_source_is_refused(fresh_db: str, other_db: str, tmp_path: Path) -> None:
    for url in (fresh_db, other_db):
        sql(url, "CREATE TABLE t (id int PRIMARY KEY, status text)")
    assert capture(tmp_path, fresh_db, "lake").returncode == 0
    for slot in ((), ("--slot", "other")):  # one landing zone holds one source's stream, by any slot
        res = capture(tmp_path, other_db, "lake", *slot)
        one_line_refusal(res, "holds the stream of database", "give that --source")
    assert capture(tmp_path, other_db, "lake2", "--slot", "other").returncode == 0
