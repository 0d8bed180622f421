"""kill -9 of the capture at its worst moments, then a restart: no transaction lost, none landed twice."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa

from cdc_backfill.capture.postgres.loop import CRASH_ENV
from tests.support.capture import capture_cmd, landed_creates, run_capture
from tests.support.pg import sql

pytestmark = [pytest.mark.pg, pytest.mark.slow]

ROWS = 300_000


def _ids(landing: Path, collection: str = "public.big") -> Counter[int]:
    return Counter(r["id"] for r in landed_creates(landing, collection))


def _slot_active(url: str) -> bool:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        active = conn.execute(
            sa.text("SELECT active FROM pg_replication_slots WHERE slot_name = 'cdc_backfill'")
        ).scalar()
    engine.dispose()
    return bool(active)


def _wait_until_streaming(url: str, proc: subprocess.Popen) -> float:  # type: ignore[type-arg]
    """Until the ``--follow`` capture holds its slot (it must not have exited); its deadline, 60 s on."""
    deadline = time.monotonic() + 60
    while not _slot_active(url):
        assert time.monotonic() < deadline
        assert proc.poll() is None
        time.sleep(0.1)
    return deadline


# with the lake on local disk and on the S3 server ("after-rename": after the file is stored, a rename
# locally, the single PUT on S3)
@pytest.mark.parametrize("lake", ["local", "s3"], indirect=True)
@pytest.mark.parametrize("step", ["after-rename", "after-commit"])
def test_kill_between_landing_and_confirming(fresh_db: str, lake, step: str) -> None:  # type: ignore[no-untyped-def]
    sql(fresh_db, "CREATE TABLE big (id int PRIMARY KEY, v text)")
    landing = lake / "landing"
    assert run_capture(fresh_db, landing).returncode == 0
    for start in range(0, 3000, 1000):  # three transactions
        sql(fresh_db, f"INSERT INTO big SELECT i, 'x' FROM generate_series({start + 1}, {start + 1000}) i")
    crashed = run_capture(fresh_db, landing, env={CRASH_ENV: step})
    assert crashed.returncode == -signal.SIGKILL
    landed_before = sum(_ids(landing).values())
    if step == "after-rename":
        assert landed_before == 3000  # the file is durable; the server was never told
    res = run_capture(fresh_db, landing)
    assert res.returncode == 0, res.stderr
    ids = _ids(landing)
    assert len(ids) == 3000
    assert set(ids.values()) == {1}  # sent again by the server, skipped by position: no duplicates
    if step == "after-rename":
        assert "3000 already landed skipped" in res.stdout


def test_follow_stops_cleanly_on_sigterm(fresh_db: str, tmp_path: Path) -> None:
    sql(fresh_db, "CREATE TABLE f (id int PRIMARY KEY)")
    landing = tmp_path / "landing"
    assert run_capture(fresh_db, landing).returncode == 0
    proc = subprocess.Popen(capture_cmd(fresh_db, landing, "--follow"), stdout=subprocess.PIPE, text=True)
    _wait_until_streaming(fresh_db, proc)
    sql(fresh_db, "INSERT INTO f SELECT generate_series(1, 500)")
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert "events landed" in out
    assert len(_ids(landing, "public.f")) == 500  # finished and confirmed on the way out
    res = run_capture(fresh_db, landing)
    assert ", 0 events landed" in res.stdout  # nothing left to land: the stop confirmed everything


def test_kill_while_the_log_receives_a_large_transaction(fresh_db: str, tmp_path: Path) -> None:
    """The log buffers a transaction until its commit has come: a kill while it arrives lands nothing of
    it, and the restart lands every row once (the server sends it again)."""
    sql(fresh_db, "CREATE TABLE big (id int PRIMARY KEY, v text)")
    landing = tmp_path / "landing"
    assert run_capture(fresh_db, landing).returncode == 0
    proc = subprocess.Popen(
        capture_cmd(fresh_db, landing, "--follow", "--roll-seconds", "0.2"),
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_until_streaming(fresh_db, proc)
        sql(fresh_db, f"INSERT INTO big SELECT i, md5(i::text) FROM generate_series(1, {ROWS}) i")
        time.sleep(0.3)  # the walsender is sending it
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert sum(_ids(landing).values()) in (0, ROWS)  # all of it or nothing, never a part
    res = run_capture(fresh_db, landing)
    assert res.returncode == 0, res.stderr
    ids = _ids(landing)
    assert len(ids) == ROWS and set(ids.values()) == {1}  # every row exactly once
