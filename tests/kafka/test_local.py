"""The local Kafka broker and Kafka Connect with Debezium (``cdc_backfill.kafka.local``), for real: a
KRaft broker from Maven Central's jars, records through it, a kill that keeps them, and Debezium's
PostgreSQL connector writing a table's changes, an incremental snapshot, its watermarks and its
notifications to topics."""

from __future__ import annotations

import socket
import threading
import uuid
from collections import defaultdict
from pathlib import Path

import pytest

from cdc_backfill.kafka.connect import LocalConnect
from cdc_backfill.kafka.jars import jars
from cdc_backfill.kafka.local import LocalKafka, broker_ready, cluster_id
from cdc_backfill.kafka.process import KafkaLocalError, free_port
from tests.support.kafka import (
    ConnectStarter,
    Record,
    TopicReader,
    payload,
    require_jars,
    start_broker,
)
from tests.support.pg import sql

# ---------------------------------------------------------------- the jars, without Maven Central


def _fake_mvn(bin_dir: Path, body: str) -> Path:
    """An ``mvn`` on PATH that runs ``body`` (sh) with $out set to its -DoutputDirectory."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "mvn"
    script.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do case "$a" in -DoutputDirectory=*) out="${a#-DoutputDirectory=}";; esac; done\n'
        + body
        + "\n"
    )
    script.chmod(0o755)
    return script


def test_jars_without_maven_say_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(KafkaLocalError) as err:
        jars("broker", cache=tmp_path / "cache")
    assert "\n" not in str(err.value) and "`mvn` is not on PATH" in str(err.value)
    assert "apt-get install maven" in str(err.value)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [".fetch.lock"]  # nothing half made


def test_a_failed_fetch_carries_the_tail_of_mavens_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_mvn(tmp_path / "bin", 'echo "[ERROR] Could not resolve dependencies: 404 Not Found"; exit 1')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    with pytest.raises(KafkaLocalError) as err:
        jars("connect", cache=tmp_path / "cache")
    headline, *tail = str(err.value).splitlines()
    assert "with Maven failed (exit 1)" in headline and "Maven Central is reachable" in headline
    assert "[ERROR] Could not resolve dependencies: 404 Not Found" in tail
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [".fetch.lock"]


def test_two_callers_at_once_fetch_once_and_see_the_folder_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = tmp_path / "calls"
    _fake_mvn(tmp_path / "bin", f'echo run >> {calls}; mkdir -p "$out"; sleep 0.5; echo jar > "$out/a-1.jar"')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    found: list[Path] = []
    threads = [
        threading.Thread(target=lambda: found.append(jars("broker", cache=tmp_path / "cache")))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls.read_text().splitlines() == ["run"]
    assert len(set(found)) == 1 and len(found) == 3
    folder = found[0]
    assert folder.name.startswith("broker-") and (folder / "a-1.jar").is_file()
    assert "org.apache.kafka:kafka_2.13:" in (folder / "COORDINATES.txt").read_text()
    assert sorted(p.name for p in folder.parent.iterdir()) == [".fetch.lock", folder.name]


def test_cluster_ids_are_what_storagetool_takes() -> None:
    ids = {cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
    assert all(set(i) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") for i in ids)


def test_nothing_listening_is_not_a_ready_broker() -> None:
    assert not broker_ready("127.0.0.1", free_port(), timeout=0.5)


# ---------------------------------------------------------------- a real broker


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _produce(bootstrap: str, topic: str, numbers: range, keys: int = 10) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for n in numbers:
        producer.produce(topic, key=f'"k{n % keys}"', value=f'{{"n": {n}}}')
        producer.poll(0)
    assert producer.flush(30) == 0, "records left undelivered"


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])
    futures[topic].result(30)


def _read(bootstrap: str, topic: str, count: int) -> list[Record]:
    with TopicReader(bootstrap, topic) as reader:
        reader.until(lambda r: len(r.records[topic]) >= count, timeout=60, what=f"{count} records")
        reader.poll(0.5)  # and no more than that
        return reader.records[topic]


@pytest.mark.kafka
@pytest.mark.slow
def test_broker_serves_a_topic_with_four_partitions(kafka_broker: LocalKafka) -> None:
    topic = _topic("four")
    _create_topic(kafka_broker.bootstrap, topic, 4)
    _produce(kafka_broker.bootstrap, topic, range(1000), keys=40)
    records = _read(kafka_broker.bootstrap, topic, 1000)
    assert len(records) == 1000
    by_partition: dict[int, list[Record]] = defaultdict(list)
    for r in records:
        by_partition[r.partition].append(r)
    assert sorted(by_partition) == [0, 1, 2, 3]
    for part in by_partition.values():  # each partition whole and in order
        assert [r.offset for r in part] == list(range(len(part)))
    partitions_of_key: dict[str, set[int]] = defaultdict(set)
    for r in records:
        partitions_of_key[r.key].add(r.partition)
    assert all(len(p) == 1 for p in partitions_of_key.values()), "a key spread over partitions"
    for key in partitions_of_key:  # a key's records in the order produced
        numbers = [r.value["n"] for r in records if r.key == key]
        assert numbers == sorted(numbers)
    assert sorted(r.value["n"] for r in records) == list(range(1000))


@pytest.mark.kafka
@pytest.mark.slow
def test_broker_killed_and_started_again_keeps_its_records(tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "kafka")
    try:
        topic = _topic("kill")
        _create_topic(broker.bootstrap, topic, 2)
        _produce(broker.bootstrap, topic, range(200))
        bootstrap = broker.bootstrap
        broker.kill()
        assert not broker.running
        broker.start()
        assert broker.bootstrap == bootstrap  # same address: clients need no new configuration
        _produce(broker.bootstrap, topic, range(200, 250))
        records = _read(broker.bootstrap, topic, 250)
        assert sorted(r.value["n"] for r in records) == list(range(250))
        assert broker.log_file.is_file() and "=== start" in broker.log_file.read_text()
    finally:
        broker.close()


@pytest.mark.kafka
@pytest.mark.slow
def test_a_broker_that_cannot_start_says_why(tmp_path: Path) -> None:
    require_jars("broker")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        broker = LocalKafka(tmp_path / "kafka", port=taken.getsockname()[1])
        with pytest.raises(KafkaLocalError) as err:
            broker.start(timeout=60)
    assert not broker.running
    headline = str(err.value).splitlines()[0]
    assert "the Kafka broker exited at start" in headline and str(broker.log_file) in headline
    assert "Address already in use" in str(err.value)  # the log's tail


# ---------------------------------------------------------------- Kafka Connect with Debezium

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
    connect = start_connect(fresh_db, [CUSTOMERS], prefix=_topic("dbz").replace("-", "_"), schemas=schemas)
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
    connect = start_connect(fresh_db, [CUSTOMERS], prefix=_topic("resume").replace("-", "_"), schemas=False)
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
