"""pause-snapshot, resume-snapshot and stop-snapshot written with ``cdc-backfill signal`` reach Debezium's
real connector through the same signal table and take effect: Debezium reports PAUSED, reads no chunk
while paused, RESUMED, then ABORTED for the stop."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from cdc_backfill.capture.debezium import DebeziumCapture
from cdc_backfill.capture.debezium_landing import notifications_file
from cdc_backfill.cli.main import main
from cdc_backfill.signals.store import SignalStore
from tests.support.debezium import dbz_drain, require_engine, settings
from tests.support.pg import plain_url, sql

pytestmark = [pytest.mark.pg, pytest.mark.debezium]


def reported(landing: Path) -> list[str]:
    path = notifications_file(landing)
    return [json.loads(line)["type"] for line in path.read_text().splitlines()] if path.exists() else []


def wait_for(landing: Path, kind: str, limit: float = 60.0) -> None:
    give_up = time.monotonic() + limit
    while kind not in reported(landing):
        assert time.monotonic() < give_up, f"no {kind} from Debezium: {reported(landing)}"
        time.sleep(0.05)


def test_pause_resume_and_stop_reach_debezium(fresh_db: str, tmp_path: Path) -> None:
    require_engine()
    url = fresh_db
    # Debezium idles poll.interval.ms only while its stream is quiet, and its own watermarks keep it busy:
    # the table must be large enough for the snapshot to outlast the signals below under load
    sql(
        url,
        "CREATE TABLE t (id int PRIMARY KEY, v text)",
        "INSERT INTO t SELECT i, 'v' || i FROM generate_series(1, 300000) i",
    )
    SignalStore(url).init()
    landing = tmp_path / "lake"
    s = settings(url, landing, ("public.t",), chunk_size=100, poll_ms=200)
    dbz_drain(url, s)
    cap = DebeziumCapture(s)
    thread = threading.Thread(target=cap.run, kwargs={"drain": False}, daemon=True)
    thread.start()
    signal = ["--source", plain_url(url)]
    try:
        assert (
            main(["signal", "execute-snapshot", *signal, "--collections", "public.t", "--id", "dbz-control"])
            == 0
        )
        wait_for(landing, "IN_PROGRESS")
        assert main(["signal", "pause-snapshot", *signal]) == 0
        wait_for(landing, "PAUSED")
        paused_at = cap.summary.records
        time.sleep(2.0)  # a running snapshot reads dozens of chunks in that time
        # a window open when the pause arrived still closes: one chunk and its watermarks at most
        assert cap.summary.records - paused_at <= 100 + 4, "Debezium read chunks while paused"
        assert main(["signal", "resume-snapshot", *signal]) == 0
        assert main(["signal", "stop-snapshot", *signal, "--collections", "public.t"]) == 0
        wait_for(landing, "RESUMED")
        wait_for(landing, "ABORTED")
    finally:
        cap.stop()
        thread.join(120)
    assert cap.summary.snapshots == {"dbz-control": "ABORTED"}  # Debezium says COMPLETED after it too
    assert 0 < cap.summary.records < 300000  # stopped before the end
