"""Kafka for the tests: a real broker for the session, Kafka Connect with Debezium against the test
PostgreSQL, and a reader that takes a topic's records as they are (key, value, partition, offset).

Under ``CI=true`` a test that cannot have its broker or its worker's jars (no Java, no Maven, Maven
Central unreachable) fails; elsewhere it is skipped with the reason. A worker that has its jars, a broker
and a database and still does not reach RUNNING fails everywhere: that is the thing under test.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cdc_backfill.kafka.broker import LocalKafka
from cdc_backfill.kafka.connect_worker import LocalConnect
from cdc_backfill.kafka.jars import jars
from cdc_backfill.kafka.process import KafkaLocalError


def unique_name(prefix: str) -> str:
    """A topic or connector name of a test's own on the session's broker."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def require_jars(kind: str) -> Path:
    """The jars of ``kind``, fetched if need be (fails under CI=true, skips elsewhere)."""
    from tests.conftest import unavailable

    try:
        return jars(kind)
    except (KafkaLocalError, OSError, subprocess.SubprocessError) as exc:
        unavailable(f"Kafka's {kind} jars", exc)


def start_broker(folder: Path) -> LocalKafka:
    """A broker of a test's own in ``folder`` (fails under CI=true, skips elsewhere)."""
    from tests.conftest import unavailable

    require_jars("broker")
    broker = LocalKafka(folder)
    try:
        return broker.start()
    except (KafkaLocalError, OSError, subprocess.SubprocessError) as exc:
        broker.stop()
        unavailable("Kafka broker", exc)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafka]:
    """One broker for the whole run; tests that kill a broker start their own (:func:`start_broker`)."""
    broker = start_broker(tmp_path_factory.mktemp("kafka"))
    yield broker
    broker.close()


ConnectStarter = Callable[..., LocalConnect]


@pytest.fixture
def start_connect(
    kafka_broker: LocalKafka, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ConnectStarter]:
    """``start_connect(url, tables, prefix=..., schemas=..., **kw)``: a Connect worker running Debezium
    on the test database ``url`` (a SQLAlchemy URL of the test server), writing to the session's broker,
    RUNNING when returned. Every worker started is stopped after the test (before its database goes)."""
    started: list[LocalConnect] = []

    def start(url: str, tables: list[str], prefix: str = "cdc", **kw: Any) -> LocalConnect:
        from tests.support.pg import plain_url  # here: conftest imports this module, keep that light

        require_jars("connect")
        kw.setdefault("folder", tmp_path_factory.mktemp("connect"))
        connect = LocalConnect(kafka_broker.bootstrap, plain_url(url), prefix, tables, **kw)
        started.append(connect)
        return connect.start()

    yield start
    for connect in started:
        connect.close()


def produce(bootstrap: str, topic: str, records: list[dict[str, Any]], partitions: int = 3) -> None:
    """``records`` on ``topic`` (made with ``partitions``), each keyed as Connect keys it."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic not in admin.list_topics(timeout=10).topics:
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for r in records:
        key = None if r.get("key") is None else json.dumps(r["key"]).encode()
        value = r["value"] if isinstance(r["value"], bytes) else json.dumps(r["value"]).encode()
        producer.produce(topic, value=value, key=key)
    producer.flush(30)


def note(signal_id: str, kind: str, schema: bool = False) -> dict[str, object]:
    """A Debezium notification record of snapshot ``signal_id`` (for :func:`produce`)."""
    doc = {"id": signal_id, "aggregate_type": "Incremental Snapshot", "type": kind, "additional_data": {}}
    return {"key": None, "value": {"schema": {"type": "struct"}, "payload": doc} if schema else doc}


def signal_row(row: str, schema: bool = False) -> dict[str, object]:
    """The record Debezium writes for a signal table row ``row`` inserted (for :func:`produce`)."""
    key = {"schema": {"type": "struct"}, "payload": {"id": row}} if schema else {"id": row}
    return {"key": key, "value": {"op": "c", "after": {"id": row, "type": "log"}, "source": {}}}


# ---------------------------------------------------------------- reading topics


@dataclass(frozen=True)
class Record:
    """One record as Kafka holds it; ``key`` and ``value`` parsed from JSON (None: none, a tombstone)."""

    topic: str
    partition: int
    offset: int
    key: Any
    value: Any
    headers: dict[str, str]

    def show(self) -> dict[str, Any]:
        return {
            "topic": self.topic, "partition": self.partition, "offset": self.offset,
            "headers": self.headers, "key": self.key, "value": self.value,
        }  # fmt: skip


def payload(doc: Any) -> Any:
    """The payload of a JSON converter document, with or without its schema wrapper."""
    if isinstance(doc, dict) and set(doc) == {"schema", "payload"}:
        return doc["payload"]
    return doc


def _parse(raw: bytes | None) -> Any:
    return None if raw is None else json.loads(raw)


class TopicReader:
    """Every record of some topics from their beginning, accumulated as they arrive (partitions assigned
    explicitly: no consumer group, nothing committed)."""

    def __init__(self, bootstrap: str, *topics: str) -> None:
        from confluent_kafka import Consumer

        self.bootstrap = bootstrap
        self.topics = list(topics)
        self.consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "tests-reader", "enable.auto.commit": False,
             "auto.offset.reset": "earliest", "enable.partition.eof": False}
        )  # fmt: skip
        self.assigned: set[str] = set()
        self.records: dict[str, list[Record]] = {t: [] for t in topics}

    def _assign_new(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        missing = [t for t in self.topics if t not in self.assigned]
        if not missing:
            return
        meta = self.consumer.list_topics(timeout=10)
        for topic in missing:
            info = meta.topics.get(topic)
            if info is None or info.error is not None or not info.partitions:
                continue  # not created yet: Connect creates a table's topic with its first event
            self.assigned.add(topic)
            parts = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(info.partitions)]
            self.consumer.incremental_assign(parts)

    def poll(self, seconds: float = 0.5) -> None:
        self._assign_new()
        if not self.assigned:
            time.sleep(seconds)
            return
        for msg in self.consumer.consume(num_messages=10_000, timeout=seconds):
            if msg.error():
                raise RuntimeError(f"consuming {msg.topic()}: {msg.error()}")
            headers = {k: (v or b"").decode() for k, v in (msg.headers() or [])}
            key, value = _parse(msg.key()), _parse(msg.value())
            self.records[msg.topic()].append(
                Record(msg.topic(), msg.partition(), msg.offset(), key, value, headers)
            )

    def until(self, done: Callable[[TopicReader], bool], timeout: float = 120.0, what: str = "") -> None:
        """Read until ``done(self)``; AssertionError after ``timeout`` seconds, with what arrived."""
        give_up = time.monotonic() + timeout
        while not done(self):
            if time.monotonic() > give_up:
                counts = {t: len(r) for t, r in self.records.items()}
                raise AssertionError(f"{what or 'records'} did not arrive in {timeout:.0f} s; got {counts}")
            self.poll()

    def close(self) -> None:
        self.consumer.close()

    def __enter__(self) -> TopicReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------- draining Connect into a landing


class KafkaDrain:
    """``capture kafka --drain`` in the test's Spark session, once Connect has delivered everything
    committed so far (``LocalConnect.caught_up``)."""

    def __init__(
        self,
        url: str,
        connect: LocalConnect,
        landing: Path,
        spark: Any,
        signal_table: str = "public.cdc_signal",
    ) -> None:
        from cdc_backfill.ingest.column_sources import ColumnSources, catalog_columns
        from tests.support.pg import plain_url

        self.url = url
        self.connect = connect
        self.landing = landing
        self.spark = spark
        self.signal_table = signal_table
        self.sources = ColumnSources(landing, signal_table, catalog_columns(plain_url(url)), None)

    def __call__(self, timeout: float = 180.0, caught_up: bool = True) -> dict[str, Any]:
        """``caught_up=False``: what the topics hold now (a worker that is down delivers nothing more)."""
        from cdc_backfill.ingest.spark.capture_kafka import capture_kafka
        from cdc_backfill.kafka.topics import Broker

        if caught_up:
            self.connect.caught_up(self.url, timeout)
        pattern = re.escape(self.connect.topic_prefix) + r"\..*"
        return capture_kafka(self.spark, self.landing, Broker(self.connect.bootstrap), pattern, self.sources)


def wait_for_snapshot(
    connect: LocalConnect,
    signal_id: str,
    timeout: float = 600.0,
    kinds: tuple[str, ...] = ("COMPLETED", "ABORTED"),
) -> str:
    """Debezium's notification of ``kinds`` on the snapshot ``signal_id`` from the notification topic (by
    default its last word: COMPLETED or ABORTED); AssertionError after ``timeout`` seconds."""
    topic = connect.notification_topic
    said: list[str] = []

    def done(reader: TopicReader) -> bool:
        for rec in reader.records[topic]:
            note = payload(rec.value) or {}
            if note.get("id") == signal_id and note.get("type") in kinds:
                said.append(note["type"])
        return bool(said)

    with TopicReader(connect.bootstrap, topic) as reader:
        reader.until(done, timeout=timeout, what=f"{' or '.join(kinds)} of snapshot {signal_id}")
    return said[-1]
