"""kill -9 of the engine at each step of a chunk, then a restart: the same consistent result."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_backfill.lakepath import parquet_metadata
from cdc_backfill.snapshot.faults import CRASH_ENV
from cdc_backfill.snapshot.progress import PROGRESS_TABLE
from tests.support.cli import cli, ok
from tests.support.judge import assert_consistent
from tests.support.pg import drain, plain_url, send, sql
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.pg, pytest.mark.slow]

TABLES = ["public.orders", "public.lines", "public.words"]


def run_engine(url: str, landing: Path, crash: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    if crash:
        env[CRASH_ENV] = crash
    cmd = [sys.executable, "-m", "cdc_backfill.cli", "snapshot", "run", "--source", url, "--landing", str(landing),
           "--once", "--readers", "2"]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


STEPS = ["after-open", "during-read", "after-close", "after-landing", "after-progress"]


# every step with the lake on local disk; with it on the S3 server, mid-read and once the chunk is stored
@pytest.mark.parametrize(
    ("step", "lake"),
    [*((s, "local") for s in STEPS), ("during-read", "s3"), ("after-landing", "s3")],
    indirect=["lake"],
)
def test_killed_at_each_step_then_restarted(fresh_db: str, lake, step: str) -> None:  # type: ignore[no-untyped-def]
    seed(fresh_db, orders=600, lines=600)
    landing = lake / "landing"
    drain(fresh_db, landing)
    writers = Writers(fresh_db, seed_value=7).start()
    try:
        send(fresh_db, *[t.replace(".", "\\.") for t in TABLES], chunk_size=50)
        crashed = run_engine(fresh_db, landing, crash=f"{step}:2")
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]
        resumed = run_engine(fresh_db, landing)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
    finally:
        writers.stop()
    drain(fresh_db, landing)
    assert_consistent(fresh_db, landing, TABLES)
    # no chunk file is half-written, whatever the step
    for f in (landing / "snapshots").rglob("*.parquet"):
        parquet_metadata(f)
    assert not list((landing / "snapshots").rglob(".*.part"))


def test_a_killed_engine_shows_as_interrupted_in_signal_list_and_snapshot_status(
    fresh_db: str, tmp_path: Path
) -> None:
    seed(fresh_db, orders=300, lines=10)
    landing = tmp_path / "landing"
    drain(fresh_db, landing)
    sid = send(fresh_db, "public\\.orders", chunk_size=50)
    assert run_engine(fresh_db, landing, crash="during-read:2").returncode == -signal.SIGKILL
    # its last heartbeat, as it is a few minutes after the kill
    sql(fresh_db, f"UPDATE {PROGRESS_TABLE} SET updated_at = updated_at - interval '5 minutes'")
    url = plain_url(fresh_db)
    listed = ok(cli(tmp_path, "signal", "list", "--source", url))
    line = next(line for line in listed.splitlines() if line.startswith(sid))
    assert " interrupted " in line and "`cdc-backfill snapshot run` goes on from the last chunk" in line, line
    status = ok(cli(tmp_path, "snapshot", "status", "--source", url))
    assert "interrupted" in status, status
    # the engine run again finishes it
    assert run_engine(fresh_db, landing).returncode == 0
    line = next(
        line
        for line in ok(cli(tmp_path, "signal", "list", "--source", url)).splitlines()
        if line.startswith(sid)
    )
    assert " done " in line, line
