"""Kafka Connect with Debezium's PostgreSQL connector (``cdc_backfill.kafka.connect_worker``), for real: a
table's changes, an incremental snapshot, its watermarks and its notifications on topics, and a worker
killed and started again."""

from __future__ import annotations

import pytest

from cdc_backfill.kafka.broker import LocalKafka
from cdc_backfill.kafka.connect_worker import LocalConnect
from tests.support.kafka import (
    ConnectStarter,
    Record,
    TopicReader,
    payload,
    unique_name,
)
from tests.support.pg import sql

CUSTOMERS = "public.customers"
SIGNAL = "public.cdc_signal"
SIGNAL_ID = "sig-1"
SCHEMA = [
    "CREATE TABLE public.customers (id int PRIMARY KEY, name text, note text)",
    "CREATE TABLE public.cdc_signal (id VARCHAR(42) PRIMARY KEY, type VARCHAR(32) NOT NULL, data VARCHAR(2048))",
]


def changes(url: str) -> None:
    """Inserts, an update, a delete and an update of a primary key, each its own transaction."""
    sql(url, "INSERT INTO customers VALUES (1, 'Ada', 'a'), (2, 'Grace', 'g'), (3, 'Edsger', 'e'), "
             "(4, 'Barbara', 'b'), (5, 'Ken', 'k')")  # fmt: skip
    sql(url, "UPDATE customers SET note = 'updated' WHERE id = 1")
    sql(url, "DELETE FROM customers WHERE id = 2")
    sql(url, "UPDATE customers SET id = 10 WHERE id = 3")


def snapshot_signal(url: str) -> None:
    sql(
        url,
        "INSERT INTO cdc_signal VALUES ('" + SIGNAL_ID + "', 'execute-snapshot', "
        '\'{"data-collections":["public.customers"],"type":"incremental"}\')',
    )


def _completed(reader: TopicReader, topic: str) -> bool:
    return any(payload(r.value)["type"] == "COMPLETED" for r in reader.records[topic] if r.value)


def run_workload(url: str, connect: LocalConnect, bootstrap: str) -> dict[str, list[Record]]:
    """The changes, then an incremental snapshot of customers; every record of the three topics once the
    snapshot's COMPLETED notification and all expected events are in."""
    customers, signals = connect.topic(CUSTOMERS), connect.topic(SIGNAL)
    notes = connect.notification_topic
    changes(url)
    with TopicReader(bootstrap, customers, signals, notes) as reader:
        # the stream first: 5 inserts, an update, a delete and its tombstone, a key change's delete,
        # tombstone and insert
        reader.until(lambda r: len(r.records[customers]) >= 11, what="the streamed changes")
        snapshot_signal(url)
        reader.until(lambda r: _completed(r, notes), what="the COMPLETED notification")
        # the 4 rows left, read by the snapshot; the signal row and two windows' watermarks (the
        # chunk's, then an empty one that finds no row after the last)
        reader.until(
            lambda r: len(r.records[customers]) >= 15 and len(r.records[signals]) >= 5,
            what="the snapshot's events",
        )
        reader.poll(1.0)  # nothing more comes
        return reader.records


def _ops(records: list[Record]) -> list[tuple[str | None, int]]:
    """(op, id) of each record; (None, id) for a tombstone."""
    out = []
    for r in records:
        key = payload(r.key)["id"]
        value = payload(r.value)
        out.append((value["op"] if value is not None else None, key))
    return out


@pytest.mark.kafka
@pytest.mark.slow
@pytest.mark.pg
@pytest.mark.parametrize("schemas", [False, True], ids=["plain", "schemas"])
def test_debezium_in_connect_streams_and_snapshots(
    fresh_db: str, kafka_broker: LocalKafka, start_connect: ConnectStarter, schemas: bool
) -> None:
    sql(fresh_db, *SCHEMA)
    connect = start_connect(
        fresh_db, [CUSTOMERS], prefix=unique_name("dbz").replace("-", "_"), schemas=schemas
    )
    assert connect.ready_seconds is not None
    status = connect.status()
    assert status is not None and status["connector"]["state"] == "RUNNING"
    assert [t["state"] for t in status["tasks"]] == ["RUNNING"]

    records = run_workload(fresh_db, connect, kafka_broker.bootstrap)
    customers = records[connect.topic(CUSTOMERS)]
    assert all(r.partition == 0 for r in customers)
    assert [r.offset for r in customers] == list(range(len(customers)))
    ops = _ops(customers)
    assert ops[:11] == [
        ("c", 1), ("c", 2), ("c", 3), ("c", 4), ("c", 5),
        ("u", 1),
        ("d", 2), (None, 2),
        ("d", 3), (None, 3), ("c", 10),
    ]  # fmt: skip
    assert sorted(ops[11:]) == [("r", 1), ("r", 4), ("r", 5), ("r", 10)]
    assert len(ops) == 15

    values = [payload(r.value) for r in customers]
    assert values[5]["after"] == {"id": 1, "name": "Ada", "note": "updated"}
    assert values[6]["before"]["id"] == 2 and values[6]["after"] is None
    # the key change: its delete points at the new key, its insert at the old one
    assert "__debezium.newkey" in customers[8].headers and "__debezium.oldkey" in customers[10].headers
    assert values[10]["after"] == {"id": 10, "name": "Edsger", "note": "e"}
    reads = values[11:]
    assert {r["after"]["id"]: r["after"] for r in reads}[1] == {"id": 1, "name": "Ada", "note": "updated"}
    assert all(r["source"]["snapshot"] == "incremental" for r in reads)
    assert all(v["source"]["snapshot"] in ("false", None) for v in values[:11] if v is not None)

    signals = [payload(r.value) for r in records[connect.topic(SIGNAL)]]
    assert [s["op"] for s in signals] == ["c"] * 5
    assert signals[0]["after"]["id"] == SIGNAL_ID and signals[0]["after"]["type"] == "execute-snapshot"
    windows = [(o["after"], c["after"]) for o, c in zip(signals[1::2], signals[2::2], strict=True)]
    assert len(windows) == 2
    for opened, closed in windows:
        assert opened["type"] == "snapshot-window-open" and closed["type"] == "snapshot-window-close"
        assert opened["id"].removesuffix("-open") == closed["id"].removesuffix("-close")
    # the READs carry the position of the close watermark that follows them, and no LSN of their own
    assert {r["source"]["sequence"] for r in reads} == {signals[2]["source"]["sequence"]}
    assert all(r["source"]["lsn"] is None and r["source"]["txId"] is None for r in reads)

    notes = [(payload(n.key), payload(n.value)) for n in records[connect.notification_topic]]
    assert notes[0][1]["aggregate_type"] == "Initial Snapshot" and notes[0][1]["type"] == "SKIPPED"
    incremental = [(k, v) for k, v in notes if v["aggregate_type"] == "Incremental Snapshot"]
    kinds = [v["type"] for _, v in incremental]
    assert kinds == ["STARTED", "IN_PROGRESS", "TABLE_SCAN_COMPLETED", "COMPLETED"]
    assert all(k == {"id": SIGNAL_ID} for k, _ in incremental)
    assert incremental[2][1]["additional_data"]["total_rows_scanned"] == "4"
    assert len(notes) == 1 + len(incremental)


@pytest.mark.kafka
@pytest.mark.slow
@pytest.mark.pg
def test_connect_killed_and_started_again_resumes(
    fresh_db: str, kafka_broker: LocalKafka, start_connect: ConnectStarter
) -> None:
    sql(fresh_db, *SCHEMA)
    connect = start_connect(
        fresh_db, [CUSTOMERS], prefix=unique_name("resume").replace("-", "_"), schemas=False
    )
    topic = connect.topic(CUSTOMERS)
    sql(fresh_db, "INSERT INTO customers SELECT g, 'before', '' FROM generate_series(1, 20) g")
    with TopicReader(kafka_broker.bootstrap, topic) as reader:
        reader.until(lambda r: len(r.records[topic]) >= 20, what="the rows before the kill")
        connect.kill()
        sql(fresh_db, "INSERT INTO customers SELECT g, 'while down', '' FROM generate_series(21, 40) g")
        connect.start()
        reader.until(lambda r: {payload(x.key)["id"] for x in r.records[topic]} == set(range(1, 41)),
                     what="the rows written while the worker was down")  # fmt: skip
        # at least once: a kill may replay the changes since the last offset flush, never skip one
        assert len(reader.records[topic]) >= 40
