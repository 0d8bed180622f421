"""The real Debezium on a par with the native engine.

docs/design.md §6 rule 7 after a snapshot Debezium ran: changes are lost on purpose (the table leaves
Debezium's publication; rows are deleted, updated and inserted; it comes back), the state built from the
stream then holds phantoms; an incremental snapshot started from our signal table, with writers running,
removes them once Debezium said the table's scan finished.

Rule 8: key changes of rows whose TOASTed column stays unchanged complete from the state, no re-read."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from cdc_backfill.capture.debezium.settings import DEFAULT_SLOT
from cdc_backfill.cli.main import main
from cdc_backfill.signals.store import SignalStore
from tests.support.debezium import dbz_drain, require_engine, settings
from tests.support.judge import assert_state_is_source
from tests.support.pg import plain_url, send, sql
from tests.support.runs import reconcile_here
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.pg, pytest.mark.spark, pytest.mark.slow, pytest.mark.debezium]

ORDERS = ("public.orders",)
LOSE = (
    f"ALTER PUBLICATION {DEFAULT_SLOT} DROP TABLE orders",
    "DELETE FROM orders WHERE id % 10 = 0",
    "UPDATE orders SET status = 'lost' WHERE id % 10 = 4",
    "INSERT INTO orders SELECT i, 'lost-insert', 1, NULL FROM generate_series(9001, 9040) i",
    f"ALTER PUBLICATION {DEFAULT_SLOT} ADD TABLE orders",
)


def last_run(state: Path) -> dict:
    return json.loads(sorted((state / "_runs").glob("*.json"))[-1].read_text())["collections"][
        "public.orders"
    ]


def test_lost_deletes_are_removed_after_a_finished_debezium_snapshot(
    spark, fresh_db: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    require_engine()
    url = fresh_db
    seed(url, orders=1000, lines=10)
    s = settings(url, tmp_path / "lake", ORDERS)
    SignalStore(url).init()
    dbz_drain(url, s)  # the slot and the publication: the stream starts here
    first = send(url, "public\\.orders")  # the rows that were there before the stream: a first snapshot
    dbz_drain(url, s, until=(first,))
    reconcile_here(spark, tmp_path / "lake", tmp_path / "state", ingest=True)
    assert_state_is_source(url, tmp_path / "state", ORDERS)
    for stmt in LOSE:
        sql(url, stmt)
    dbz_drain(url, s)
    reconcile_here(spark, tmp_path / "lake", tmp_path / "state", ingest=True)
    assert last_run(tmp_path / "state")["phantoms_removed"] == 0  # the lost deletes are still in the state

    writers = Writers(url, seed_value=5).start()  # inserting, updating, deleting, changing keys
    sid = send(url, "public\\.orders")
    done = dbz_drain(url, s, until=(sid,))
    writers.stop()
    assert done.snapshots == {sid: "COMPLETED"}
    dbz_drain(url, s)
    reconcile_here(spark, tmp_path / "lake", tmp_path / "state", ingest=True)
    run = last_run(tmp_path / "state")
    assert run["phantoms_removed"] >= 100, run  # the 100 rows deleted while the table was out
    assert run["snapshots"][sid] == "rows before its start removed"
    assert_state_is_source(url, tmp_path / "state", ORDERS)


# A poll of a second takes every committed change into one batch, so one file; batches of one record
# cut every key change between two files, whose second starts with the delete carried over.
@pytest.mark.parametrize("batches", ["one", "of_one_record"])
def test_key_changes_of_toasted_rows_complete_without_a_re_read(
    spark, fresh_db: str, tmp_path: Path, monkeypatch, capsys, batches: str
) -> None:  # type: ignore[no-untyped-def]
    require_engine()
    url = fresh_db
    seed(url, orders=300, lines=10, docs_every=3)  # every third order has a TOASTed doc
    s = settings(url, tmp_path / "lake", ORDERS)
    SignalStore(url).init()
    dbz_drain(url, s)
    monkeypatch.chdir(tmp_path)
    first = send(url, "public\\.orders")
    dbz_drain(url, s, until=(first,))
    reconcile_here(spark, tmp_path / "lake", tmp_path / "state", ingest=True)
    # the doc stays unchanged: PostgreSQL's stream leaves it out of the new key's row; a chain too
    sql(url, "UPDATE orders SET id = id + 100000 WHERE doc IS NOT NULL AND id % 4 = 0",
        "UPDATE orders SET id = id + 100000 WHERE id BETWEEN 100000 AND 100100")  # fmt: skip
    if batches == "one":
        dbz_drain(url, replace(s, poll_ms=1000))
    else:
        dbz_drain(url, replace(s, extra={**s.extra, "max.batch.size": "1"}))
        carried = [p for p in (tmp_path / "lake").rglob("dbz-*.jsonl") if b'{"follows":' in p.read_bytes()]
        assert len(carried) >= 50  # each key change's create in a file of its own, after its delete
    reconcile_here(spark, tmp_path / "lake", tmp_path / "state", ingest=True)
    assert_state_is_source(url, tmp_path / "state", ORDERS)
    capsys.readouterr()
    assert main(["signal", "reread", "--state", "state", "--source", plain_url(url)]) == 0
    assert "nothing to re-read" in capsys.readouterr().out
