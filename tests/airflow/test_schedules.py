"""The scheduled backfills' entries: a chunk size left out is the engine's to choose, a wrong one is
refused with its entry and reason (pure)."""

from __future__ import annotations

import pytest

from cdc_backfill.airflow.schedules import ScheduleError, parse_entry

ENTRY = {"name": "orders_daily", "collections": ["public\\.orders"]}


def test_a_chunk_size_left_out_is_sized_by_the_engine_and_one_given_is_kept() -> None:
    assert parse_entry(ENTRY, "backfill 1").chunk_size is None
    assert parse_entry({**ENTRY, "chunk_size": 500}, "backfill 1").chunk_size == 500


def test_a_chunk_compression_is_auto_unless_given_and_a_wrong_one_is_refused() -> None:
    assert parse_entry(ENTRY, "backfill 1").chunk_compression == "auto"
    assert parse_entry({**ENTRY, "chunk_compression": "zstd"}, "backfill 1").chunk_compression == "zstd"
    with pytest.raises(
        ScheduleError, match=r"backfill 1 \(orders_daily\): chunk_compression must be one of auto, "
    ):
        parse_entry({**ENTRY, "chunk_compression": "gzip"}, "backfill 1")


@pytest.mark.parametrize(
    ("key", "value"), [("chunk_size", 0), ("chunk_size", True), ("chunk_size", "big"), ("readers", None)]
)
def test_a_wrong_chunk_size_or_readers_is_refused_with_its_entry(key: str, value: object) -> None:
    with pytest.raises(ScheduleError, match=rf"backfill 1 \(orders_daily\): {key} must be 1 to "):
        parse_entry({**ENTRY, key: value}, "backfill 1")


def test_a_kafka_capture_needs_its_topics() -> None:
    entry = {"name": "k", "collections": ["public\\.orders"], "capture": "kafka"}
    with pytest.raises(ScheduleError, match="capture kafka needs topics"):
        parse_entry(entry, "f")
    parsed = parse_entry({**entry, "topics": "cdc\\..*"}, "f")
    assert (parsed.topics, parsed.kafka_conn_id) == ("cdc\\..*", "kafka_default")
