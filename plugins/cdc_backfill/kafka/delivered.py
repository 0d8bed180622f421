"""What the topics have delivered: the wait between a snapshot and its reconcile when the stream comes
through Kafka.

Debezium delivers a database's changes in commit order. So a row committed into the signal table now
(a *marker*) is on the signal table's topic only once every change committed before it is on its
table's topic: the snapshot's last close watermark, or Debezium's last READs. Debezium's own snapshot
also says when it ended, in a notification (``notification.enabled.channels=sink``) on a topic of the
user's naming, found here by its records' shape. Reads go from a known offset, never through a
consumer group, and commit nothing.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
from typing import Any

from orjson import loads

from cdc_backfill.kafka.topics import (
    TIMEOUT_S,
    Broker,
    BrokerUnavailable,
    KafkaError,
    Partition,
    client_config,
    offsets,
    partitions,
)

ENDED = ("COMPLETED", "ABORTED")


def notification(value: bytes | None) -> dict[str, Any] | None:
    """A Debezium notification's fields (with or without the JSON converter's schema), else None (pure)."""
    if not value or b'"aggregate_type"' not in value:
        return None
    doc = loads(value)
    doc = doc.get("payload", doc) if isinstance(doc, dict) and "schema" in doc else doc
    if isinstance(doc, dict) and "op" not in doc and {"id", "type", "aggregate_type"} <= set(doc):
        return doc
    return None


def row_id(key: bytes | None) -> Any:
    """The ``id`` of a record's key (a signal table row's), wrapped in ``{schema, payload}`` or not (pure)."""
    try:
        doc = loads(key) if key else None
    except ValueError:
        return None
    if isinstance(doc, dict) and "payload" in doc and "schema" in doc:
        doc = doc["payload"]
    return doc.get("id") if isinstance(doc, dict) else None


def signal_topic(broker: Broker, pattern: str, signal_table: str) -> str:
    """The topic among those ``pattern`` matches that carries ``signal_table`` (``schema.table``):
    Debezium names it ``<topic.prefix>.<schema>.<table>``. KafkaError when none does (yet: Debezium
    makes a topic with its table's first change)."""
    names = sorted({p.topic for p in partitions(broker, pattern)})
    found = [n for n in names if n == signal_table or n.endswith(f".{signal_table}")]
    if len(found) != 1:
        raise KafkaError(
            f"{'no topic' if not found else 'more than one topic'} matching {pattern!r} carries the signal "
            f"table {signal_table} ({', '.join(found) or 'none of ' + ', '.join(names)}): the connector "
            "must capture it (table.include.list) and the topics' pattern match its one topic"
        )
    return found[0]


def end_offsets(broker: Broker, topic: str) -> dict[int, int]:
    """Each partition of ``topic`` and the offset its next record will have."""
    return {p.partition: end for p, (_, end) in offsets(broker, partitions_of(broker, topic)).items()}


def topic_exists(broker: Broker, topic: str) -> bool:
    """Whether the broker has ``topic`` (Debezium makes one with its table's first change)."""
    try:
        partitions_of(broker, topic)
    except BrokerUnavailable:
        raise
    except KafkaError:
        return False
    return True


def partitions_of(broker: Broker, topic: str) -> list[Partition]:
    return partitions(broker, _exactly(topic))


def records(broker: Broker, ranges: Mapping[Partition, tuple[int, int]]) -> Iterator[Any]:
    """Every record of each partition's ``[from, to)``, partition by partition in offset order."""
    from confluent_kafka import Consumer, TopicPartition

    todo = {p: r for p, r in ranges.items() if r[0] < r[1]}
    if not todo:
        return
    consumer = Consumer(
        {**client_config(broker), "group.id": "cdc-backfill-wait", "enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(p.topic, p.partition, start) for p, (start, _) in todo.items()])
        left = {(p.topic, p.partition): end for p, (_, end) in todo.items()}
        deadline = time.monotonic() + 6 * TIMEOUT_S
        while left and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=1000, timeout=1.0):
                if msg.error() is not None:
                    continue
                where = (msg.topic(), msg.partition())
                if where in left and msg.offset() < left[where]:
                    yield msg
                    if msg.offset() + 1 >= left[where]:
                        del left[where]
        if left:
            raise KafkaError(
                f"the Kafka broker at {broker.bootstrap} did not deliver {len(left)} partition(s)"
            )
    finally:
        consumer.close()


def row_delivered(broker: Broker, topic: str, marker: str, since: Mapping[int, int]) -> bool:
    """Whether the row ``marker`` is on ``topic`` past the offsets ``since`` (its end before the row
    was written; a partition it did not have then is read from its start)."""
    ends = end_offsets(broker, topic)
    ranges = {Partition(topic, p): (int(since.get(p, 0)), end) for p, end in ends.items()}
    return any(row_id(msg.key()) == marker for msg in records(broker, ranges))


def notification_topics(broker: Broker, pattern: str) -> list[str]:
    """The topics ``pattern`` matches whose last record is a Debezium notification."""
    found: set[str] = set()
    parts = offsets(broker, partitions(broker, pattern))
    last = {p: (end - 1, end) for p, (first, end) in parts.items() if end > first}
    for msg in records(broker, last):
        if notification(msg.value()) is not None:
            found.add(msg.topic())
    return sorted(found)


def snapshot_end(broker: Broker, pattern: str, signal_id: str) -> str | None:
    """How Debezium said its snapshot ``signal_id`` ended (COMPLETED or ABORTED) on a notification
    topic ``pattern`` matches; None while it has not."""
    ended = None
    for topic in notification_topics(broker, pattern):
        ranges = {
            p: (first, end) for p, (first, end) in offsets(broker, partitions_of(broker, topic)).items()
        }
        for msg in records(broker, ranges):
            note = notification(msg.value())
            if note and note.get("id") == signal_id and note.get("type") in ENDED:
                ended = str(note["type"])
    return ended


def _exactly(topic: str) -> str:
    return re.escape(topic)
