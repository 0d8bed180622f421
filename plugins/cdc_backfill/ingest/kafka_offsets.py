"""Which offsets of which partitions a ``capture kafka`` run lands, and where the last run stopped.

Exactly once: a run's manifest (the ingest's commit, ``ingest.spark.job``) records each partition's
offset range ``[from, to)`` it read, in the same file that names the log files holding those records.
The next run starts every partition at the greatest ``to`` any manifest records. A run killed before its
manifest leaves nothing that counts, and the next one reads the same offsets again; a run that wrote
its manifest is never read again. No consumer group's offsets are read: the landing is the truth.

A partition whose records retention deleted before they landed is refused, never skipped silently:
the events are lost, and only a new snapshot of the collections on that topic can bring their state
back (``--skip-lost-offsets`` then moves past the gap, and the manifest records it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cdc_backfill.kafka.topics import KafkaError, Partition

MANIFEST_KEY = "kafka"  # a manifest's list of the offset ranges it landed
LOST_KEY = "kafka_skipped"  # ... and of those it was told to skip (deleted before they landed)


@dataclass(frozen=True)
class OffsetRange:
    """``[start, end)`` of one partition: the records a run reads."""

    part: Partition
    start: int
    end: int

    @property
    def records(self) -> int:
        return self.end - self.start

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.part.topic,
            "partition": self.part.partition,
            "from": self.start,
            "to": self.end,
        }


@dataclass(frozen=True)
class Plan:
    """What one run reads (``ranges``, empty ones left out) and what it was told to skip (``lost``)."""

    ranges: tuple[OffsetRange, ...]
    lost: tuple[OffsetRange, ...] = ()

    @property
    def records(self) -> int:
        return sum(r.records for r in self.ranges)

    def manifest_entries(self) -> dict[str, Any]:
        """What the run's manifest records beside its files (pure): every range read, whether it held
        events or only tombstones and markers, so that none is read twice."""
        out: dict[str, Any] = {MANIFEST_KEY: [r.to_dict() for r in self.ranges]}
        if self.lost:
            out[LOST_KEY] = [r.to_dict() for r in self.lost]
        return out


def committed(manifests: Iterable[Mapping[str, Any]]) -> dict[Partition, int]:
    """Each partition's next offset to read: the greatest end any manifest records (pure)."""
    out: dict[Partition, int] = {}
    for manifest in manifests:
        for entry in [*manifest.get(MANIFEST_KEY, []), *manifest.get(LOST_KEY, [])]:
            part = Partition(entry["topic"], int(entry["partition"]))
            out[part] = max(out.get(part, 0), int(entry["to"]))
    return out


def plan(
    done: Mapping[Partition, int],
    available: Mapping[Partition, tuple[int, int]],
    skip_lost: bool = False,
) -> Plan:
    """The ranges a run reads (pure): each partition from where the landing stopped (from its earliest
    offset when never read) up to its end offset now. ``available``: each partition's (earliest, end).

    KafkaError when records the landing has not read are gone (retention deleted them, or the topic was
    made anew), unless ``skip_lost``: then the gap is skipped and named in the plan."""
    ranges, lost, gone = [], [], []
    for part in sorted(available, key=lambda p: (p.topic, p.partition)):
        earliest, end = available[part]
        start = done.get(part)
        if start is None:
            start = earliest
        elif start > end:
            gone.append(f"{part}: the landing read up to offset {start}, the topic now ends at {end}")
            if not skip_lost:
                continue
            lost.append(OffsetRange(part, end, start))  # nothing to read: recorded so it is seen
            start = end
        elif start < earliest:
            gone.append(f"{part}: offsets {start} to {earliest - 1} were deleted before they landed")
            lost.append(OffsetRange(part, start, earliest))
            start = earliest
        if end > start:
            ranges.append(OffsetRange(part, start, end))
    if gone and not skip_lost:
        raise KafkaError(
            "events lost, nothing landed: " + "; ".join(gone) + ". Their changes cannot be read any more: "
            "send a new execute-snapshot of the collections on those topics (cdc-backfill signal snapshot), "
            "then run this again with --skip-lost-offsets to go on past the gap"
        )
    return Plan(tuple(ranges), tuple(lost))


def spark_offsets(ranges: Iterable[OffsetRange]) -> tuple[str, str, str]:
    """The Kafka source's ``assign``, ``startingOffsets`` and ``endingOffsets`` options for ``ranges``
    (pure): exactly those offsets, nothing the broker adds meanwhile."""
    import json

    assign: dict[str, list[int]] = {}
    starts: dict[str, dict[str, int]] = {}
    ends: dict[str, dict[str, int]] = {}
    for r in ranges:
        assign.setdefault(r.part.topic, []).append(r.part.partition)
        starts.setdefault(r.part.topic, {})[str(r.part.partition)] = r.start
        ends.setdefault(r.part.topic, {})[str(r.part.partition)] = r.end
    return json.dumps(assign), json.dumps(starts), json.dumps(ends)
