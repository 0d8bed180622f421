"""What the topics have delivered (the wait of ``capture: kafka``), read from a real broker: records
produced as Debezium's connector writes them (keys and values with and without the JSON converter's
schema)."""

from __future__ import annotations

import json

import pytest

from cdc_backfill.kafka.delivered import (
    end_offsets,
    notification,
    row_delivered,
    row_id,
    signal_topic,
    snapshot_end,
)
from cdc_backfill.kafka.topics import Broker, KafkaError
from tests.support.kafka import note, produce, signal_row, unique_name

pytestmark = pytest.mark.kafka


def test_a_notification_and_a_rows_id_are_read_with_or_without_the_schema() -> None:
    for schema in (False, True):
        value = json.dumps(note("s1", "COMPLETED", schema)["value"]).encode()
        assert notification(value) == note("s1", "COMPLETED")["value"]
        key = json.dumps(signal_row("m1", schema)["key"]).encode()
        assert row_id(key) == "m1"
    assert notification(json.dumps({"op": "c", "aggregate_type": "x", "id": 1, "type": "t"}).encode()) is None
    assert notification(None) is None and row_id(None) is None and row_id(b"not json") is None


def test_the_signal_tables_topic_is_found_among_those_the_pattern_matches(kafka_broker) -> None:  # type: ignore[no-untyped-def]
    prefix = unique_name("sig").replace("-", "_")
    broker = Broker(kafka_broker.bootstrap)
    produce(kafka_broker.bootstrap, f"{prefix}.public.orders", [signal_row("x")])
    produce(kafka_broker.bootstrap, f"{prefix}.public.cdc_signal", [signal_row("y")])
    assert signal_topic(broker, f"{prefix}\\..*", "public.cdc_signal") == f"{prefix}.public.cdc_signal"
    with pytest.raises(KafkaError, match=r"no topic matching .* carries the signal table public\.elsewhere"):
        signal_topic(broker, f"{prefix}\\..*", "public.elsewhere")


def test_a_marker_is_delivered_only_once_past_the_offsets_it_was_written_after(kafka_broker) -> None:  # type: ignore[no-untyped-def]
    topic = f"{unique_name('mark')}.public.cdc_signal"
    broker = Broker(kafka_broker.bootstrap)
    produce(kafka_broker.bootstrap, topic, [signal_row("old"), signal_row("other")])
    since = end_offsets(broker, topic)
    assert sum(since.values()) == 2
    assert not row_delivered(broker, topic, "old", since), "a row before the offsets is not this wait's"
    assert not row_delivered(broker, topic, "new", since)
    produce(kafka_broker.bootstrap, topic, [signal_row("new", schema=True)])
    assert row_delivered(broker, topic, "new", since)


def test_debeziums_last_word_on_a_snapshot_comes_from_the_notification_topic(kafka_broker) -> None:  # type: ignore[no-untyped-def]
    prefix = unique_name("note").replace("-", "_")
    broker = Broker(kafka_broker.bootstrap)
    produce(kafka_broker.bootstrap, f"{prefix}.public.orders", [signal_row(str(i)) for i in range(20)])
    produce(kafka_broker.bootstrap, f"{prefix}.notifications", [note("s1", "STARTED")], partitions=1)
    pattern = f"{prefix}\\..*"
    assert snapshot_end(broker, pattern, "s1") is None
    produce(
        kafka_broker.bootstrap, f"{prefix}.notifications", [note("s2", "ABORTED", schema=True)], partitions=1
    )
    assert snapshot_end(broker, pattern, "s1") is None and snapshot_end(broker, pattern, "s2") == "ABORTED"
    produce(kafka_broker.bootstrap, f"{prefix}.notifications", [note("s1", "COMPLETED")], partitions=1)
    assert snapshot_end(broker, pattern, "s1") == "COMPLETED"
