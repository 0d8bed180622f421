"""Verify at one position while writers run (inserts, updates, deletes, key changes), as a user types
it: the source is read in a snapshot exported at a position P, the landing drained past P, and the state
advanced to P in memory; verify passes every time, leaves the state as it was, and still names the
range of one state row changed by hand."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import cli, in_process, ok, snapshot_as_typed
from tests.support.pg import plain_url, sql
from tests.support.runs import reconcile_here
from tests.support.tamper import corrupt_one_row
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.pg, pytest.mark.spark, pytest.mark.slow]

QUIET = 10_000_000  # a key no writer touches (writers keep to ids up to 8,000; its doc is NULL)


def test_verify_passes_while_writers_run_and_still_names_a_corrupted_range(
    spark, fresh_db: str, tmp_path: Path, monkeypatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    seed(fresh_db, orders=400, lines=200)
    sql(fresh_db, f"INSERT INTO orders VALUES ({QUIET}, 'quiet', 1, NULL)")
    url = plain_url(fresh_db)
    verify = ("verify", "--source", url, "--state", "state", "--collection", "public.orders")
    writers = Writers(fresh_db, seed_value=21).start()
    monkeypatch.chdir(tmp_path)
    try:
        snapshot_as_typed(tmp_path, url, ["--collections", "public.orders", "--chunk-size", "40"])
        reconcile_here(spark, tmp_path / "lake", tmp_path / "state")
        versions = sorted(p.name for p in (tmp_path / "state" / "public.orders").iterdir())
        writers.wait_for_changes(15)  # the source moves on after the state's position
        report = json.loads(ok(in_process(capsys, *verify, "--json")))
        assert report["all_equal"], report["summary"]
        assert report["position"] and "not_at_position" not in report
        writers.wait_for_changes(15)  # and again
        text = ok(in_process(capsys, *verify))
        assert "both as of position" in text and text.rstrip().endswith("every range equal"), text[-500:]
        # read and compared, never written: the state is as the reconcile left it
        assert sorted(p.name for p in (tmp_path / "state" / "public.orders").iterdir()) == versions

        corrupt_one_row(tmp_path / "state", "public.orders", QUIET)
        writers.wait_for_changes(15)
        res = in_process(capsys, *verify)
        assert res.returncode == 1, res.stderr[-2000:]
        # the quiet key is the largest: the last of the 16 ranges, and only it
        assert "both as of position" in res.stdout and "; 1 of 16 ranges differ: 15\n" in res.stdout, (
            res.stdout
        )
    finally:
        writers.stop()


def test_verify_waits_for_a_capture_that_follows_the_slot(spark, fresh_db: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """While `capture postgres --follow` holds the slot, verify cannot drain it: it writes a fence and
    waits until that capture has landed it, then compares at its position."""
    seed(fresh_db, orders=200, lines=50)
    url = plain_url(fresh_db)
    snapshot_as_typed(tmp_path, url, ["--collections", "public.orders", "--chunk-size", "50"])
    reconcile_here(spark, tmp_path / "lake", tmp_path / "state")
    # its log to a file: a pipe nobody reads fills up and blocks the capture (then SIGTERM waits forever)
    log = (tmp_path / "follow.log").open("w")
    follow = subprocess.Popen(
        [sys.executable, "-X", "faulthandler", "-m", "cdc_backfill.cli", "capture", "postgres", "--source", url,
         "--landing", "lake", "--follow", "--roll-seconds", "0.5"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=log, text=True,
    )  # fmt: skip
    writers = Writers(fresh_db, seed_value=3).start()
    try:
        writers.wait_for_changes(20)
        res = cli(tmp_path, "verify", "--source", url, "--state", "state", "--collection", "public.orders")
        assert res.returncode == 0, res.stderr[-2000:]
        assert "waiting for it to land a fence" in res.stderr, res.stderr[-2000:]
        assert "Using incubator modules" not in res.stderr  # the JVM's own noise is not relayed
        assert "both as of position" in res.stdout and res.stdout.rstrip().endswith("every range equal")
    finally:
        writers.stop()
        follow.send_signal(signal.SIGTERM)
        try:
            follow.wait(timeout=60)
        except subprocess.TimeoutExpired:
            # which signals it blocks, ignores, catches and has pending: whether SIGTERM (bit 15) reached it
            masks = [
                ln
                for ln in Path(f"/proc/{follow.pid}/status").read_text().splitlines()
                if ln.startswith("Sig")
            ]
            follow.send_signal(signal.SIGABRT)  # faulthandler writes where each thread stands to the log
            follow.wait(timeout=30)
            log.close()
            pytest.fail(
                "capture --follow did not stop on SIGTERM:\n"
                + "\n".join(masks)
                + "\n"
                + (tmp_path / "follow.log").read_text()[-6000:]
            )
        log.close()
