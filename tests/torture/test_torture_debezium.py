"""The consistency torture test with Debezium as the engine: our signals, Debezium's incremental snapshot
and stream (its embedded PostgreSQL connector, for real), seeded random writers throughout (inserts,
updates, deletes, key changes, key changes of rows whose TOASTed column stays unchanged), the connector
stopped once a chunk was read and started again, and deletes lost upstream (two tables leave Debezium's
publication while rows are deleted and changed, then come back). After the drain, ingest, the reconcile
and the re-reads it asks for (through Debezium), every table equals the source, row for row, and the
lost deletes are gone. The same seeds as the native torture test (``TORTURE_SEEDS``)."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import pytest

from cdc_backfill.capture.debezium.settings import DEFAULT_SLOT
from cdc_backfill.cli.main import main
from cdc_backfill.landing.notifications import read_notifications
from cdc_backfill.signals.store import SignalStore
from tests.support.debezium import dbz_drain, key_history, require_engine, run_until_a_chunk, settings
from tests.support.judge import assert_state_is_source, overlap
from tests.support.pg import plain_url, send, sql
from tests.support.runs import reconcile_here
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.pg, pytest.mark.spark, pytest.mark.slow, pytest.mark.torture, pytest.mark.debezium]

TABLES = ("public.orders", "public.lines", "public.words")
PATTERNS = tuple(t.replace(".", "\\.") for t in TABLES)
SEEDS = int(os.environ.get("TORTURE_SEEDS", "5"))
LOSE = (
    f"ALTER PUBLICATION {DEFAULT_SLOT} DROP TABLE orders, lines",
    "DELETE FROM orders WHERE id % 6 = 0",
    "UPDATE orders SET status = 'lost' WHERE id % 6 = 2",
    "DELETE FROM lines WHERE line_no = 1",
    f"ALTER PUBLICATION {DEFAULT_SLOT} ADD TABLE orders, lines",
)


def cli_ok(*args: str) -> None:
    assert main(list(args)) == 0, args


def ingest_and_reconcile(spark, folder: Path) -> None:  # type: ignore[no-untyped-def]
    reconcile_here(spark, folder / "lake", folder / "state", ingest=True)  # one job: ingest, reconcile


def runs_removed(state: Path) -> tuple[int, dict[str, dict[str, str]]]:
    """Phantoms removed by the last reconcile run, over every collection, and what the phantom rule did
    or waits for per collection and snapshot (the run summary's words)."""
    run = json.loads(sorted((state / "_runs").glob("*.json"))[-1].read_text())
    infos = run["collections"].values()
    said = {c: info.get("snapshots", {}) for c, info in run["collections"].items()}
    return sum(info.get("phantoms_removed", 0) for info in infos), said


@pytest.mark.parametrize("seed_value", range(SEEDS))
def test_debezium_state_equals_the_source_under_random_concurrent_writes(
    spark, fresh_db: str, tmp_path: Path, monkeypatch, capsys, seed_value: int
) -> None:  # type: ignore[no-untyped-def]
    require_engine()
    rng = random.Random(seed_value)
    url = fresh_db
    seed(url, orders=rng.randint(150, 400), lines=rng.randint(150, 400), docs_every=4)
    watermarking = rng.choice(["insert_insert", "insert_delete"])
    s = settings(url, tmp_path / "lake", TABLES, chunk_size=rng.randint(13, 61), watermarking=watermarking)
    SignalStore(url).init()
    dbz_drain(url, s)  # the slot and the publication: the stream starts here
    monkeypatch.chdir(tmp_path)  # the commands as a user types them, beside the landing
    first = send(url, *PATTERNS)  # the rows there before the stream
    dbz_drain(url, s, until=(first,))
    ingest_and_reconcile(spark, tmp_path)
    for stmt in LOSE:
        sql(url, stmt)

    writers = Writers(url, seed_value=seed_value, max_order=900, toast_moves=True).start()
    try:
        sid = send(url, *PATTERNS)
        stopped = run_until_a_chunk(s, sid)  # the connector stopped once a chunk was read
        assert sid not in stopped.snapshots, "the snapshot ended before the restart"
        writers.wait_for_changes(30)  # changes while it is down
        done = dbz_drain(url, s, until=(sid,))  # started again: the snapshot goes on from its offsets
        assert done.snapshots == {sid: "COMPLETED"}
    finally:
        writers.stop()
    dbz_drain(url, s)
    ingest_and_reconcile(spark, tmp_path)
    removed, said = runs_removed(tmp_path / "state")
    # a notification without the batch file landed before it would never count (nor remove anything)
    notes = read_notifications(tmp_path / "lake")
    assert all(n.get("landed_in") for n in notes), [n for n in notes if not n.get("landed_in")]
    assert overlap(url, tmp_path / "lake", TABLES).changes_in_span > 0, (
        "the writers changed rows mid-snapshot"
    )
    # rows whose old key's value was never known (moved before Debezium read them): re-read through it
    capsys.readouterr()
    cli_ok("signal", "reread", "--state", "state", "--source", plain_url(url))
    rereads = tuple(re.findall(r"execute-snapshot (\S+) written", capsys.readouterr().out))
    if rereads:
        dbz_drain(url, s, until=rereads)
        ingest_and_reconcile(spark, tmp_path)
    print(f"seed {seed_value} ({watermarking}): {removed} phantoms removed, {len(rereads)} re-read signals")
    assert removed > 0, f"the lost deletes were removed: {said}"
    try:
        assert_state_is_source(url, tmp_path / "state", TABLES)
    except AssertionError as exc:  # the landed records of the keys that differ: the log must explain it
        coll = str(exc).split(":", 1)[0]
        keys = re.findall(r"\((\d+),\)", str(exc))
        raise AssertionError(f"{exc}\n{key_history(tmp_path / 'lake', coll, keys)}\n{said}") from None
