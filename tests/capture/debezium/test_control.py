"""pause-snapshot, resume-snapshot and stop-snapshot written with ``cdc-backfill signal`` reach Debezium's
real connector through the same signal table and take effect: Debezium reports PAUSED, reads no chunk
while paused, RESUMED, then ABORTED for the stop."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from cdc_backfill.capture.debezium.connector import DebeziumCapture
from cdc_backfill.cli.main import main
from cdc_backfill.landing.notifications import notifications_file
from cdc_backfill.signals.store import SignalStore
from tests.support.debezium import dbz_drain, landed_records, require_engine, settings
from tests.support.pg import plain_url, sql

pytestmark = [pytest.mark.pg, pytest.mark.debezium]


def reported(landing: Path) -> list[str]:
    path = notifications_file(landing)
    return [json.loads(line)["type"] for line in path.read_text().splitlines()] if path.exists() else []


def signal_rows(landing: Path) -> list[tuple[str, str]]:
    """(id, type) of each row inserted into the signal table, in the order Debezium delivered them."""
    rows = []
    for record in landed_records(landing):
        value = record["value"] or {}
        payload = value.get("payload", value)
        if payload.get("op") == "c" and (payload.get("source") or {}).get("table") == "cdc_signal":
            rows.append((payload["after"]["id"], payload["after"]["type"]))
    return rows


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
        time.sleep(2.0)  # a snapshot that ignored the pause would read chunks meanwhile
        assert main(["signal", "resume-snapshot", *signal]) == 0
        assert main(["signal", "stop-snapshot", *signal, "--collections", "public.t"]) == 0
        wait_for(landing, "RESUMED")
        wait_for(landing, "ABORTED")
    finally:
        cap.stop()
        thread.join(120)
    assert cap.summary.snapshots == {"dbz-control": "ABORTED"}  # Debezium says COMPLETED after it too
    # Judged by the stream's order, not by how many records happened to land after the notification
    # (under load Debezium's queue still holds chunks read before the pause): between the pause and
    # the resume signals, only the window open when the pause arrived may open and close
    signals = signal_rows(landing)
    types = [t for _, t in signals]
    paused, resumed = types.index("pause-snapshot"), types.index("resume-snapshot")
    opened_while_paused = types[paused:resumed].count("snapshot-window-open")
    assert types[:paused].count("snapshot-window-open") > 0, signals
    assert opened_while_paused <= 1, f"Debezium read chunks while paused: {signals}"
    assert 0 < cap.summary.records < 300000  # stopped before the end
