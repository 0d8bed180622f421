"""The local Kafka broker (``cdc_backfill.kafka.broker``), for real: a KRaft broker from Maven Central's
jars, records through it, a kill that keeps them, a start that fails saying why."""

from __future__ import annotations

import socket
from collections import defaultdict
from pathlib import Path

import pytest

from cdc_backfill.kafka.broker import LocalKafka, broker_ready, cluster_id
from cdc_backfill.kafka.process import KafkaLocalError, free_port
from tests.support.kafka import (
    Record,
    TopicReader,
    require_jars,
    start_broker,
    unique_name,
)


def test_cluster_ids_are_what_storagetool_takes() -> None:
    ids = {cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(len(i) == 22 and not i.startswith("-") for i in ids)
    assert all(set(i) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") for i in ids)


def test_nothing_listening_is_not_a_ready_broker() -> None:
    assert not broker_ready("127.0.0.1", free_port(), timeout=0.5)


# ---------------------------------------------------------------- a real broker


def _produce(bootstrap: str, topic: str, numbers: range, keys: int = 10) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for n in numbers:
        producer.produce(topic, key=f'"k{n % keys}"', value=f'{{"n": {n}}}')
        producer.poll(0)
    assert producer.flush(30) == 0, "records left undelivered"


def _createunique_name(bootstrap: str, topic: str, partitions: int) -> None:
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
    topic = unique_name("four")
    _createunique_name(kafka_broker.bootstrap, topic, 4)
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
        topic = unique_name("kill")
        _createunique_name(broker.bootstrap, topic, 2)
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
