"""Records of Kafka topics to parsed rows, on Spark: what ``capture kafka`` lands in the log.

Spark's Kafka source reads each partition's offset range as one task (in parallel on a cluster), in
offset order; a Python worker parses each record with the same parser as every file (``events.parse``):
a Debezium record from its Kafka key and value, a DataWorks record from its value. Each parsed row names
where it came from as ``kafka:<topic>[<partition>]`` and the record's offset, so a record that does not
parse is named by topic, partition and offset.

Positions come from the records, not from the offsets: a partition's offsets order only that partition,
while a window's watermarks (on the signal table's topic) must compare with the changes of every other
topic. Debezium PostgreSQL's ``sequence`` (the last commit's LSN, then the change's) orders changes in
commit order across topics, with the READs of its own incremental snapshots at the sequence of the
stream they were emitted in (docs/design.md §5); a partition is one stream for the placement of a first
transaction after a connector restart (``events.positions.PgStream``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdc_backfill.events.dataworks import is_dataworks
from cdc_backfill.events.model import ParseError, Quarantined
from cdc_backfill.events.parse import DEFAULT_OPTIONS, RECORD_EXCERPT, ParseOptions, loads, parse_record
from cdc_backfill.events.positions import KEY_CHANGE_CREATE, KEY_CHANGE_DELETE, PgStream
from cdc_backfill.ingest.arrow_typing import Typing
from cdc_backfill.ingest.column_sources import ColumnsError, ColumnSources
from cdc_backfill.ingest.inputs import ingest_lock, remove_unnamed
from cdc_backfill.ingest.kafka_offsets import OffsetRange, Plan, committed, plan, spark_offsets
from cdc_backfill.ingest.rounds import Rounds
from cdc_backfill.ingest.spark.job import empty_summary, land
from cdc_backfill.ingest.spark.parse import PARSED_SCHEMA, ParsedColumns
from cdc_backfill.kafka.delivered import notification
from cdc_backfill.kafka.topics import (
    Broker,
    BrokerUnavailable,
    KafkaError,
    ReadFailed,
    offsets,
    partitions,
    read_failure,
)
from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.manifests import NOTES_KEY, roll_manifests
from cdc_backfill.landing.stream import InputError

KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "headers")
# The headers Debezium puts on the two halves of a key change (``__debezium.newkey`` on the old key's
# delete and tombstone, ``__debezium.oldkey`` on the new key's create): which half a record is.
KEY_CHANGE_HEADERS = {b"__debezium.newkey": KEY_CHANGE_DELETE, b"__debezium.oldkey": KEY_CHANGE_CREATE}
_BATCH_ROWS = 20_000


def kafka_records(spark: SparkSession, broker: Broker, ranges: Sequence[OffsetRange]) -> DataFrame:
    """The I/O edge: exactly the records of ``ranges`` (``key``, ``value``, ``topic``, ``partition``,
    ``offset``). Records deleted in between fail the read rather than go missing."""
    assign, starts, ends = spark_offsets(ranges)
    reader = spark.read.format("kafka")
    for name, value in broker.spark_options().items():
        reader = reader.option(name, value)
    return (
        reader.option("assign", assign)
        .option("startingOffsets", starts)
        .option("endingOffsets", ends)
        .option("failOnDataLoss", "true")
        .option("includeHeaders", "true")
        .load()
        .select(*KAFKA_COLUMNS)
    )


def origin(topic: str, partition: int) -> str:
    """Where a parsed row's record came from (its ``file``; the offset is its ``line``)."""
    return f"kafka:{topic}[{partition}]"


def record_of(key: bytes | None, value: bytes, options: ParseOptions) -> tuple[object, bytes]:
    """A Kafka record as the parser reads it, and its text as a file would hold it (pure): a DataWorks
    value alone (its key says nothing the value does not), else the key and value pair a sink writes."""
    doc = loads(value)
    if options.format != "debezium" and is_dataworks(doc):
        return doc, value
    if key is None:
        return {"value": doc}, b'{"value":' + value + b"}"
    return {"key": loads(key), "value": doc}, b'{"key":' + key + b',"value":' + value + b"}"


def notes_of(parsed: DataFrame) -> dict[str, Any]:
    """The notifications a run read, in their partitions' order, for its manifest (``NOTES_KEY``)."""
    rows = (
        parsed.where(F.col("op") == "h").where(F.col("record").isNotNull()).select("file", "line", "record")
    )
    kept = [json.loads(r["record"]) for r in sorted(rows.collect(), key=lambda r: (r["file"], r["line"]))]
    notes = [k for k in kept if "aggregate_type" in k]  # a schema change's record is no notification
    return {NOTES_KEY: notes} if notes else {}


def key_change(headers: list[dict[str, object]] | None) -> int | None:
    """The half of a key change a record's headers name, if any (pure)."""
    for header in headers or ():
        name = header.get("key")
        half = KEY_CHANGE_HEADERS.get(name.encode() if isinstance(name, str) else name)  # type: ignore[arg-type]
        if half is not None:
            return half
    return None


def parse_kafka_batches(
    batches: Iterator[pa.RecordBatch], options: ParseOptions = DEFAULT_OPTIONS, after: int = 0
) -> Iterator[pa.RecordBatch]:
    """Batches of Kafka records (``KAFKA_COLUMNS``), in offset order per partition, to parsed rows
    (``PARSED_SCHEMA``). A tombstone (no value) carries no change and gives no row. ``after``: the
    greatest LSN landed before (where a connector's first transaction after a restart is placed, when
    it opens a partition's records)."""
    out = ParsedColumns()
    streams: dict[str, PgStream] = {}
    seen: dict[str, set[object]] = {}
    for batch in batches:
        columns = [batch.column(c).to_pylist() for c in KAFKA_COLUMNS]
        for key, value, topic, partition, offset, headers in zip(*columns, strict=True):
            if value is None:
                continue
            where = origin(topic, partition)
            raw = value
            note = notification(value)
            if note is not None:
                out.add_marker(json.dumps(note, sort_keys=True), where, offset)
                continue
            try:
                record, raw = record_of(key, value, options)
                stream = streams.setdefault(where, PgStream(after))
                events = parse_record(record, options, order=stream, key_change=key_change(headers))
            except ParseError as exc:
                reason = str(exc)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                reason = f"unexpected shape: {type(exc).__name__}: {exc}"
            else:
                out.add_events(events, where, offset, raw, seen.setdefault(where, set()), {})
                reason = None
            if reason is not None:
                text = raw.decode("utf-8", "replace")[:RECORD_EXCERPT]
                out.add_quarantined(Quarantined(reason, where, offset, text), where, offset)
            if len(out) >= _BATCH_ROWS:
                yield out.flush()
    if len(out):
        yield out.flush()


def parse_kafka(records: DataFrame, options: ParseOptions = DEFAULT_OPTIONS, after: int = 0) -> DataFrame:
    """Kafka records (:func:`kafka_records`) to parsed rows, one Python worker a Spark partition;
    ``after``: as :func:`parse_kafka_batches` takes it."""
    return records.mapInArrow(lambda it: parse_kafka_batches(it, options, after), PARSED_SCHEMA)


def ingest_kafka(
    spark: SparkSession,
    landing: Path,
    broker: Broker,
    todo: Plan,
    sources: ColumnSources,
    after: int = 0,
    run: str | None = None,
) -> dict[str, Any]:
    """Land the records ``todo`` reads (the caller holds the ingest lock, and planned from the landing's
    offsets under it) in the log, exactly once: its manifest records the offset ranges with the files
    (``ingest.kafka_offsets``). ``after``: the greatest LSN landed before (``parse_kafka_batches``). A record that does not parse refuses the whole run (InputError, nothing
    landed), named by topic, partition and offset: a partition's later records must not land past it."""
    summary = {**empty_summary(run, files=0), "records": todo.records, "partitions": len(todo.ranges)}
    if not todo.ranges and not todo.lost:
        return summary

    def parse(options: ParseOptions, typing: Typing | None) -> DataFrame:
        return parse_kafka(kafka_records(spark, broker, todo.ranges), options, after)

    return land(spark, landing, parse, sources, todo.manifest_entries(), summary, strict=True, more=notes_of)


def capture_kafka(
    spark: SparkSession,
    landing: Path,
    broker: Broker,
    pattern: str,
    sources: ColumnSources,
    skip_lost: bool = False,
) -> dict[str, Any]:
    """One round of ``capture kafka``: every partition of the topics ``pattern`` matches, from where
    the landing stopped to its end offset now, into the log (``ingest_kafka``), under the ingest lock."""
    landing = lake_path(landing)
    parts = partitions(broker, pattern)
    with ingest_lock(landing):
        remove_unnamed(landing)
        manifests = roll_manifests(landing)  # once: the offsets landed, and how far the stream got
        todo = plan(committed(manifests), offsets(broker, parts), skip_lost)
        # where a connector restart's first transaction goes: after every LSN landed
        after = max((m["position"][0] for m in manifests if m["position"]), default=0)
        summary = ingest_kafka(spark, landing, broker, todo, sources, after)
    summary["topics"] = sorted({p.topic for p in parts})
    if todo.lost:
        summary["skipped_lost_offsets"] = [r.to_dict() for r in todo.lost]
    return summary


def capture_rounds(
    spark: SparkSession,
    landing: Path,
    broker: Broker,
    pattern: str,
    sources: ColumnSources,
    rounds: Rounds,
    skip_lost: bool = False,
) -> dict[str, Any]:
    """``capture kafka``: :func:`capture_kafka` in ``rounds`` (one, or until told to stop); their
    summed summary. A round that failed on the way to the broker is tried again where ``rounds``
    allows (``--follow``); a refusal (a record, a type, lost offsets) ends the run at once."""
    for _ in rounds:
        try:
            summary = capture_kafka(spark, landing, broker, pattern, sources, skip_lost)
        except BrokerUnavailable as exc:
            rounds.retry(exc, str(exc))
            continue
        except (ColumnsError, InputError, KafkaError):
            raise
        except Exception as exc:  # the read itself failed (the JVM's error): nothing landed
            why = read_failure(exc, broker)
            rounds.retry(ReadFailed(why), why)
            continue
        rounds.add(summary)
    return rounds.total
