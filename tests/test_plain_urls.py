"""Every command that takes a source, run as a new user types it: a plain ``postgresql://`` URL (and
``postgres://``), relative folders, against the real PostgreSQL; then the reconcile, whose stderr holds
no Spark INFO line, and ``state`` over what it wrote."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.support.cli import cli
from tests.support.output import spark_info_lines
from tests.support.pg import plain_url

pytestmark = [pytest.mark.pg, pytest.mark.slow]


def ok(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    return res.stdout


def test_a_bad_url_is_one_line_and_exit_2(tmp_path: Path) -> None:
    res = cli(tmp_path, "signal", "list", "--source", "postgresql+nosuchdriver://u@h/db")
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0, res.stderr
    assert "'nosuchdriver' of 'postgresql+nosuchdriver://' is not installed" in res.stderr


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_an_unreachable_server_is_one_line_and_exit_3(tmp_path: Path, scheme: str) -> None:
    res = cli(tmp_path, "snapshot", "status", "--source", f"{scheme}://nobody:secret@127.0.0.1:1/none")
    assert res.returncode == 3, res.stdout + res.stderr
    assert res.stderr.startswith("cdc-backfill snapshot: cannot reach the source"), res.stderr
    assert "Traceback" not in res.stderr and "secret" not in res.stderr


@pytest.mark.spark
def test_every_source_command_takes_a_plain_postgresql_url(fresh_db: str, tmp_path: Path) -> None:
    url = plain_url(fresh_db)
    engine = sa.create_engine(fresh_db)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE orders (id int PRIMARY KEY, status text)"))
        conn.execute(sa.text("INSERT INTO orders SELECT i, 'open' FROM generate_series(1, 500) i"))
    src = ["--source", url]
    ok(cli(tmp_path, "signal", "init", *src))
    ok(cli(tmp_path, "capture", "postgres", *src, "--landing", "lake", "--drain"))
    ok(
        cli(
            tmp_path,
            "signal",
            "execute-snapshot",
            *src,
            "--collections",
            "public.orders",
            "--chunk-size",
            "100",
        )
    )
    with engine.begin() as conn:  # changes the stream carries after the signal
        conn.execute(sa.text("UPDATE orders SET status = 'paid' WHERE id <= 50"))
        conn.execute(sa.text("DELETE FROM orders WHERE id > 490"))
    ok(cli(tmp_path, "snapshot", "run", *src, "--landing", "lake", "--once"))
    assert "public.orders" in ok(cli(tmp_path, "snapshot", "status", *src))
    ok(cli(tmp_path, "signal", "pause-snapshot", "--source", "postgres://" + url.split("://", 1)[1]))
    ok(cli(tmp_path, "signal", "resume-snapshot", *src))
    ok(cli(tmp_path, "signal", "stop-snapshot", *src, "--collections", "public.orders"))
    ok(cli(tmp_path, "signal", "log", *src, "--message", "plain URLs"))
    assert "execute-snapshot" in ok(cli(tmp_path, "signal", "list", *src))
    ok(cli(tmp_path, "capture", "postgres", *src, "--landing", "lake", "--drain"))
    status = json.loads(ok(cli(tmp_path, "capture", "status", *src, "--landing", "lake", "--json")))
    assert status["files"] > 0

    res = cli(tmp_path, "reconcile", "--landing", "lake", "--state", "state", "--master", "local[2]")
    ok(res)
    summary = json.loads(res.stdout)  # stdout is the summary alone; the steps went to stderr
    assert summary["collections"]["public.orders"]["rows"] == 490
    assert not spark_info_lines(res.stderr), res.stderr
    assert "public.orders: done in" in res.stderr
    assert "session on local[2]" in res.stderr  # spark-submit's --master, not the job's default

    report = json.loads(ok(cli(tmp_path, "verify", *src, "--state", "state", "--collection", "public.orders",
                               "--json", "--master", "local[2]")))  # fmt: skip
    assert report["all_equal"]
    assert "490" in ok(cli(tmp_path, "state", "--state", "state"))
    paid = ok(
        cli(
            tmp_path,
            "state",
            "--state",
            "state",
            "--sql",
            "SELECT count(*) AS n FROM orders WHERE status = 'paid'",
        )
    )
    assert paid.splitlines()[2].strip() == "50"
    engine.dispose()
