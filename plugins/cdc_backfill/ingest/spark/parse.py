"""Files of JSON change events to canonical events at scale, exactly as the pure-Python parser reads
them: what ``ingest`` reads before it types the events into the log.

Debezium JSON lines are parsed on the JVM (``jvm``); the lines and files that path leaves to the
Python parser (``jvm.BY_LINE``, ``jvm.BY_FILE``: DataWorks records, records that are not JSON,
documents, ...) go to Python workers (``mapInArrow``), so every record keeps its file and line and the
Spark path never disagrees with ``cdc-backfill events parse``.

Row values (``key``, ``before``, ``after``) stay JSON text: collections differ in columns, and the
state writer types them per collection. ``position`` is the position's key (``spark.positions``): one
binary value Spark compares byte by byte in position order, exact for positions of any size.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from cdc_backfill.events.model import Quarantined, dumps
from cdc_backfill.events.parse import DEFAULT_OPTIONS, ParseOptions, file_records, parse_line, parse_lines
from cdc_backfill.events.positions import position_key
from cdc_backfill.ingest.connect import wrapped_columns
from cdc_backfill.ingest.spark.jvm import BY_FILE, BY_LINE, SEQUENCE_RESTART, parsed_lines

# What the Python workers return: events and quarantined records in the same rows (with a reason).
PARSED_SCHEMA = StructType(
    [
        StructField("collection", StringType()),
        StructField("op", StringType()),
        StructField("key", StringType()),
        StructField("before", StringType()),
        StructField("after", StringType()),
        StructField("unchanged", ArrayType(StringType())),
        StructField("position", BinaryType()),
        StructField("source_ts_ms", LongType()),
        StructField("format", StringType()),
        StructField("snapshot", StringType()),
        StructField("file", StringType()),
        StructField("line", LongType()),
        StructField("quarantine_reason", StringType()),
        StructField("record", StringType()),
        # what the record's {schema, payload} wrapper says of its collection (ingest.connect), on the
        # first event of each collection in each file (or batch of lines) the Python parser read
        StructField("described", StringType()),
        # an event parsed on the JVM whose record has a schema wrapper (its description is read apart)
        StructField("wrapped", BooleanType()),
    ]
)

EVENT_COLUMNS = [
    "collection",
    "op",
    "key",
    "before",
    "after",
    "unchanged",
    "position",
    "source_ts_ms",
    "format",
    "snapshot",
    "file",
    "line",
]
QUARANTINE_COLUMNS = ["file", "line", "quarantine_reason", "record"]
ARROW_SCHEMA = pa.schema(
    [
        ("collection", pa.string()),
        ("op", pa.string()),
        ("key", pa.string()),
        ("before", pa.string()),
        ("after", pa.string()),
        ("unchanged", pa.list_(pa.string())),
        ("position", pa.binary()),
        ("source_ts_ms", pa.int64()),
        ("format", pa.string()),
        ("snapshot", pa.string()),
        ("file", pa.string()),
        ("line", pa.int64()),
        ("quarantine_reason", pa.string()),
        ("record", pa.string()),
        ("described", pa.string()),
        ("wrapped", pa.bool_()),
    ]
)
_BATCH_ROWS = 20_000


def _json(value: Any) -> bytes | None:
    return None if value is None else dumps(value)


class _Columns:
    """The Arrow columns of one output batch, as Python lists appended to directly: the append runs
    once per event, and every call or dict built there is paid a million times per million events."""

    def __init__(self) -> None:
        self.cols: list[list[Any]] = [[] for _ in ARROW_SCHEMA.names]

    def __len__(self) -> int:
        return len(self.cols[10])  # the file column: one value per row, event or quarantined

    def add_events(self, events: list[Any], path: str, lineno: int, text: bytes, seen: set[Any]) -> None:
        """One line's events; the first event of each collection in the file carries the columns its
        schema wrapper describes (``seen``: the collections looked at)."""
        (collection, op, key, before, after, unchanged, position, ts, fmt, snapshot, file, line, reason,
         record, described, wrapped) = self.cols  # fmt: skip
        for ev in events:
            collection.append(ev.collection)
            op.append(ev.op)
            key.append(_json(ev.key))
            before.append(_json(ev.before))
            after.append(_json(ev.after))
            unchanged.append(ev.unchanged)
            position.append(position_key(ev.position))
            ts.append(ev.source_ts_ms)
            fmt.append(ev.format)
            snapshot.append(ev.snapshot)
            file.append(path)
            line.append(lineno)
            reason.append(None)
            record.append(None)
            wrapped.append(False)
            if ev.collection in seen:
                described.append(None)
            else:
                seen.add(ev.collection)
                described.append(wrapped_columns(text))

    def add_quarantined(self, item: Quarantined, path: str, lineno: int) -> None:
        for c in self.cols[:10]:
            c.append(None)
        for c, value in zip(
            self.cols[10:], (path, lineno, item.reason, item.record, None, False), strict=True
        ):
            c.append(value)

    def flush(self) -> pa.RecordBatch:
        batch = pa.RecordBatch.from_arrays(
            [pa.array(c, type=t) for c, t in zip(self.cols, ARROW_SCHEMA.types, strict=True)],
            schema=ARROW_SCHEMA,
        )
        for c in self.cols:
            c.clear()
        return batch


def _parse_batches(batches: Iterator[pa.RecordBatch], options: ParseOptions) -> Iterator[pa.RecordBatch]:
    out = _Columns()
    for batch in batches:
        paths = batch.column("path").to_pylist()
        contents = batch.column("content")
        for i, path in enumerate(paths):
            data: bytes = contents[i].as_py()
            lines = file_records(data)  # lines, or the events of one JSON document, as `events parse` reads
            seen: set[str | None] = set()  # collections of this file whose wrapper was looked at
            for lineno, item in parse_lines(lines, path, options):
                if isinstance(item, Quarantined):
                    out.add_quarantined(item, path, lineno)
                else:
                    out.add_events(item, path, lineno, lines[lineno - 1], seen)
                if len(out) >= _BATCH_ROWS:
                    yield out.flush()
    if len(out):
        yield out.flush()


def _parse_lines(batches: Iterator[pa.RecordBatch], options: ParseOptions) -> Iterator[pa.RecordBatch]:
    """``(file, line, text)`` rows the JVM left to Python, parsed one by one (no stream order needed:
    a file that needs it goes whole, ``jvm.BY_FILE``)."""
    out = _Columns()
    seen: dict[str, set[str | None]] = {}
    for batch in batches:
        files, linenos = batch.column("file").to_pylist(), batch.column("line").to_pylist()
        texts = batch.column("text").to_pylist()
        for path, lineno, text in zip(files, linenos, texts, strict=True):
            item = parse_line(text.encode(), path, lineno, options)
            if isinstance(item, Quarantined):
                out.add_quarantined(item, path, lineno)
            elif item is not None:
                out.add_events(item, path, lineno, text.encode(), seen.setdefault(path, set()))
            if len(out) >= _BATCH_ROWS:
                yield out.flush()
    if len(out):
        yield out.flush()


def first_pass(files: DataFrame, options: ParseOptions = DEFAULT_OPTIONS) -> DataFrame:
    """``(path, content)`` rows to one row per line: parsed on the JVM, or left to Python with its text
    (``route``); one row per file left to Python whole, with its content."""
    text = F.col("content").cast("string")  # the bytes as they are: checked below, not replaced
    lines = F.split(text, r"\r\n|\r|\n")
    first = F.filter(lines, lambda line: F.trim(line) != "")[0]
    restart = F.exists(lines, lambda line: line.contains('"sequence"') & line.rlike(SEQUENCE_RESTART))
    whole = (
        F.lit(options.format == "dataworks")
        | (first.isNotNull() & F.try_parse_json(first).isNull())  # a document, or not JSON lines
        | restart
        | ~F.is_valid_utf8(text)  # bytes that are not UTF-8: Python quarantines their lines exactly
    )
    exploded = files.select(
        F.col("path").alias("file"),
        F.when(whole, F.col("content")).alias("content"),
        F.posexplode(F.when(whole, F.array(F.lit(None).cast("string"))).otherwise(lines)).alias("i", "text"),
    )
    by_file = exploded.where(F.col("content").isNotNull()).select(
        "file", F.lit(None).cast("long").alias("line"), F.lit(BY_FILE).alias("route"), "content"
    )
    by_line = parsed_lines(
        exploded.where(F.col("content").isNull() & (F.col("text") != "")).select(
            "file", (F.col("i") + 1).cast("long").alias("line"), "text"
        ),
        options.collection,
        options.key_columns,
    )
    return by_line.unionByName(by_file, allowMissingColumns=True)


def parse_landing_files(
    files: DataFrame, options: ParseOptions = DEFAULT_OPTIONS, checkpoint: bool = False, jvm: bool = True
) -> DataFrame:
    """``(path, content)`` rows, as the ``binaryFile`` source gives them, to parsed rows.

    Events and quarantined records come out together; split them with :func:`events_only` and
    :func:`quarantined_only`. ``checkpoint``: the result is kept (``localCheckpoint``) for the many jobs
    that read it, and the JVM's pass is parsed once: when it left nothing to Python (a job counts that),
    it is the result as it is. ``jvm=False``: every file parsed by Python (what the JVM's parse is
    tested against).
    """
    if not jvm:
        out = python_parse(files.select("path", "content"), options)
        return out.localCheckpoint() if checkpoint else out
    first = first_pass(files, options)
    if checkpoint:
        first = first.localCheckpoint()
        if first.where(F.col("route").isNotNull()).isEmpty():
            return _as_parsed(first)
    by_line = first.where(F.col("route") == BY_LINE).select("file", "line", "text")
    by_file = first.where(F.col("route") == BY_FILE).select(F.col("file").alias("path"), "content")
    out = (
        _as_parsed(first.where(F.col("route").isNull()))
        .unionByName(by_line.mapInArrow(lambda it: _parse_lines(it, options), PARSED_SCHEMA))
        .unionByName(python_parse(by_file, options))
    )
    return out.localCheckpoint() if checkpoint else out


def python_parse(files: DataFrame, options: ParseOptions = DEFAULT_OPTIONS) -> DataFrame:
    """``(path, content)`` rows parsed whole by the Python parser, each file in delivery order."""
    return files.mapInArrow(lambda it: _parse_batches(it, options), PARSED_SCHEMA)


def _as_parsed(jvm: DataFrame) -> DataFrame:
    """The JVM's rows in the parsed rows' columns."""
    missing = {"quarantine_reason", "record", "described"}
    return jvm.select(
        *[
            F.lit(None).cast(f.dataType).alias(f.name) if f.name in missing else F.col(f.name)
            for f in PARSED_SCHEMA.fields
        ]
    )


def events_only(parsed: DataFrame, columns: Sequence[str] = EVENT_COLUMNS) -> DataFrame:
    return parsed.where(F.col("quarantine_reason").isNull()).select(*columns)


def quarantined_only(parsed: DataFrame) -> DataFrame:
    return parsed.where(F.col("quarantine_reason").isNotNull()).select(*QUARANTINE_COLUMNS)


def lines_at(spark: SparkSession, wanted: Sequence[tuple[str, int]]) -> dict[tuple[str, int], bytes]:
    """The text of some lines of some files, by (file as the parsed rows name it, line number)."""
    by_file: dict[str, list[int]] = {}
    for file, line in wanted:
        by_file.setdefault(file, []).append(line)
    if not by_file:
        return {}
    lines = F.split(F.col("content").cast("string"), r"\r\n|\r|\n")
    wanted_lines = F.create_map(
        *[x for f, ls in by_file.items() for x in (F.lit(f), F.array(*map(F.lit, ls)))]
    )
    rows = (
        spark.read.format("binaryFile")
        .load(list(by_file))
        .select(
            "path",
            F.transform(
                wanted_lines[F.col("path")],
                lambda n: F.struct(n.alias("n"), F.element_at(lines, n).alias("t")),
            ).alias("lines"),
        )
        .collect()
    )
    return {(r["path"], x["n"]): x["t"].encode() for r in rows for x in r["lines"] or []}


def read_landing_files(spark: SparkSession, path: str, pattern: str = "*.json*") -> DataFrame:
    """The I/O edge: every file under ``path`` (recursively) whose name matches ``pattern``."""
    return (
        spark.read.format("binaryFile")
        .option("pathGlobFilter", pattern)
        .option("recursiveFileLookup", "true")
        .load(path)
    )


def landing_events(spark: SparkSession, path: str, options: ParseOptions = DEFAULT_OPTIONS) -> DataFrame:
    """A landing-zone directory of JSON lines as parsed rows (events and quarantined records)."""
    return read_landing_files(spark, path).transform(lambda files: parse_landing_files(files, options))
