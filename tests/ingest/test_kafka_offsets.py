"""Where a ``capture kafka`` run starts and what it reads (pure): the landing's manifests are the offsets'
only record, and offsets retention deleted are refused, never skipped silently."""

from __future__ import annotations

import json

import pytest

from cdc_backfill.ingest.kafka_offsets import (
    LOST_KEY,
    MANIFEST_KEY,
    OffsetRange,
    Plan,
    committed,
    plan,
    spark_offsets,
)
from cdc_backfill.kafka.topics import KafkaError, Partition
from cdc_backfill.landing.manifests import NOTES_KEY, manifest_notes

A0, A1, B0 = Partition("a", 0), Partition("a", 1), Partition("b", 0)


def test_a_partition_never_read_starts_at_its_earliest_offset() -> None:
    todo = plan({}, {A0: (5, 9), A1: (0, 0)})
    assert todo.ranges == (OffsetRange(A0, 5, 9),)  # the empty partition reads nothing
    assert todo.records == 4


def test_the_next_run_starts_where_the_manifests_end() -> None:
    manifests = [
        {MANIFEST_KEY: [{"topic": "a", "partition": 0, "from": 0, "to": 4}]},
        {"inputs": []},  # a file ingest's manifest: no offsets
        {MANIFEST_KEY: [{"topic": "a", "partition": 0, "from": 4, "to": 7}, {"topic": "b", "partition": 0, "from": 0, "to": 2}]},
    ]  # fmt: skip
    done = committed(manifests)
    assert done == {A0: 7, B0: 2}
    todo = plan(done, {A0: (0, 9), B0: (0, 2), A1: (0, 3)})
    assert todo.ranges == (OffsetRange(A0, 7, 9), OffsetRange(A1, 0, 3))


def test_offsets_retention_deleted_are_refused_with_what_to_do() -> None:
    with pytest.raises(KafkaError) as err:
        plan({A0: 3}, {A0: (10, 12), B0: (0, 1)})
    text = str(err.value)
    assert "a[0]: offsets 3 to 9 were deleted before they landed" in text
    assert "execute-snapshot" in text and "--skip-lost-offsets" in text and "nothing landed" in text


def test_skipping_lost_offsets_is_recorded_in_the_manifest() -> None:
    todo = plan({A0: 3}, {A0: (10, 12)}, skip_lost=True)
    assert todo.ranges == (OffsetRange(A0, 10, 12),)
    entries = todo.manifest_entries()
    assert entries[LOST_KEY] == [{"topic": "a", "partition": 0, "from": 3, "to": 10}]
    assert committed([entries]) == {A0: 12}


def test_a_topic_made_anew_is_refused() -> None:
    with pytest.raises(
        KafkaError, match=r"a\[0\]: the landing read up to offset 50, the topic now ends at 4"
    ):
        plan({A0: 50}, {A0: (0, 4)})


def test_spark_reads_exactly_the_planned_offsets() -> None:
    assign, starts, ends = spark_offsets(
        [OffsetRange(A0, 1, 4), OffsetRange(A1, 0, 2), OffsetRange(B0, 7, 8)]
    )
    assert json.loads(assign) == {"a": [0, 1], "b": [0]}
    assert json.loads(starts) == {"a": {"0": 1, "1": 0}, "b": {"0": 7}}
    assert json.loads(ends) == {"a": {"0": 4, "1": 2}, "b": {"0": 8}}


def test_a_plan_without_records_has_nothing_to_land() -> None:
    assert Plan(()).records == 0 and Plan(()).manifest_entries() == {MANIFEST_KEY: []}


def test_notifications_in_manifests_count_once_their_manifest_exists() -> None:
    note = {"id": "sig-1", "type": "COMPLETED", "aggregate_type": "Incremental Snapshot"}
    manifests = [{MANIFEST_KEY: []}, {MANIFEST_KEY: [], NOTES_KEY: [note]}]
    assert manifest_notes(manifests) == [{**note, "applied": True}]
