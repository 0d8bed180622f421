"""Files of JSON change events to canonical events at scale, with the same parser as the pure-Python
path: what ``ingest`` reads before it types the events into the log.

Each landing file is parsed whole by one Python worker (``mapInArrow``), so every record keeps its file
and line, and the Spark path can never disagree with ``cdc-backfill events parse``. Landing files are
rolled by size (the capture writes tens of MB), which bounds a worker's memory.

Row values (``key``, ``before``, ``after``) stay JSON text: collections differ in columns, and the
state writer types them per collection. ``position`` is the position's key (``spark.positions``): one
binary value Spark compares byte by byte in position order, exact for positions of any size.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from cdc_backfill.arrowbuf import repeated_string
from cdc_backfill.eventlog.schema import OPS
from cdc_backfill.events.model import ROW_OPS, Quarantined, dumps
from cdc_backfill.events.parse import DEFAULT_OPTIONS, ParseOptions, file_records, parse_lines
from cdc_backfill.events.positions import position_key
from cdc_backfill.ingest.arrow_typing import Staged, Typing, stage_typed
from cdc_backfill.ingest.connect_schemas import wrapped_columns
from cdc_backfill.ingest.plain import FORMAT as PLAIN_FORMAT
from cdc_backfill.ingest.plain import PlainFile, parse_file, sparse_strings

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
        # first event of each collection in each file only
        StructField("described", StringType()),
        # the key names and column names of a row event, as JSON, on the first event of each shape
        # (collection, key names, column names) a worker parsed only: what ingest checks against the
        # collection's description, without reading every row's JSON again
        StructField("shape", StringType()),
        # a log file a worker wrote of one collection's events of one file (``Typing``), on one row
        # standing for them all, with their counts (``typed.TALLY``)
        StructField("staged", StringType()),
        StructField("tally", ArrayType(LongType())),
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
        ("shape", pa.string()),
        ("staged", pa.string()),
        ("tally", pa.list_(pa.int64())),
    ]
)
_BATCH_ROWS = 20_000
_MAX_TASKS = 4096


class ParsedColumns:
    """The Arrow columns of one output batch, as Python lists appended to directly: the append runs
    once per event, and every call or dict built there is paid a million times per million events."""

    def __init__(self) -> None:
        self.cols: list[list[Any]] = [[] for _ in ARROW_SCHEMA.names]
        self.shapes: set[tuple[Any, ...]] = set()  # the shapes this worker gave out already

    def __len__(self) -> int:
        return len(self.cols[10])  # the file column: one value per row, event or quarantined

    def add_events(
        self,
        events: list[Any],
        path: str,
        lineno: int,
        raw: bytes,
        seen: set[Any],
        schemas: dict[str, Any],
    ) -> None:
        """One record's events (``raw``: the record as read, at ``lineno`` of ``path``); the first event
        of each collection in the file carries the columns its schema wrapper describes (``seen``: the
        collections looked at)."""
        (collection, op, key, before, after, unchanged, position, ts, fmt, snapshot, file, line, reason,
         record, described, shape, staged, tally) = self.cols  # fmt: skip
        shapes = self.shapes
        for ev in events:
            collection.append(ev.collection)
            op.append(ev.op)
            # (not through a helper: three calls an event are a few percent of the parse)
            key.append(None if ev.key is None else dumps(ev.key))
            before.append(None if ev.before is None else dumps(ev.before))
            after.append(None if ev.after is None else dumps(ev.after))
            unchanged.append(ev.unchanged)
            position.append(position_key(ev.position))
            ts.append(ev.source_ts_ms)
            fmt.append(ev.format)
            snapshot.append(ev.snapshot)
            file.append(path)
            line.append(lineno)
            reason.append(None)
            # a marker's own record (a schema change's text) is kept for the run's summary
            record.append(None if ev.message is None or ev.op != "h" else dumps(ev.message))
            staged.append(None)
            tally.append(None)
            if ev.op not in ROW_OPS or ev.collection in seen:  # only a row's record describes its collection
                described.append(None)
            else:
                seen.add(ev.collection)
                described.append(wrapped_columns(raw, schemas))
            row = ev.after if ev.after is not None else ev.before
            this = (ev.collection, None if ev.key is None else tuple(ev.key), tuple(row or ()))
            if this in shapes or ev.collection is None or ev.op not in OPS:
                shape.append(None)
            else:
                shapes.add(this)
                names = None if this[1] is None else sorted(this[1])
                shape.append(orjson.dumps({"key": names, "columns": this[2]}).decode())

    def add_quarantined(self, item: Quarantined, path: str, lineno: int) -> None:
        for c in self.cols[:10]:
            c.append(None)
        for c, value in zip(
            self.cols[10:], (path, lineno, item.reason, item.record, None, None, None, None), strict=True
        ):
            c.append(value)

    def add_marker(self, text: str, path: str, lineno: int) -> None:
        """A marker (``h``) that carries its record: a Debezium notification, kept for the manifest."""
        for c, value in zip(self.cols[:10], (None, "h"), strict=False):
            c.append(value)
        for c in self.cols[2:10]:
            c.append(None)
        for c, value in zip(self.cols[10:], (path, lineno, None, text, None, None, None, None), strict=True):
            c.append(value)

    def flush(self) -> pa.RecordBatch:
        batch = pa.RecordBatch.from_arrays(
            [pa.array(c, type=t) for c, t in zip(self.cols, ARROW_SCHEMA.types, strict=True)],
            schema=ARROW_SCHEMA,
        )
        for c in self.cols:
            c.clear()
        return batch


def _plain_batches(file: PlainFile, path: str, typing: Typing | None) -> Iterator[pa.RecordBatch]:
    """A file the C reader read (``ingest.plain``), as the parser's rows in batches; with ``typing``,
    the events its workers typed and wrote (``ingest.arrow_typing``) as one row a log file, with their shapes."""
    n = file.count
    nulls = pa.nulls(n, pa.string())
    built = {
        **file.columns,
        "format": repeated_string(PLAIN_FORMAT, n),
        "file": repeated_string(path, n),
        "quarantine_reason": nulls,
        "record": nulls,
        "described": nulls,  # the plain record has no schema wrapper
        "shape": sparse_strings(n, file.shapes),
        "staged": nulls,
        "tally": pa.nulls(n, pa.list_(pa.int64())),
    }
    batch = pa.RecordBatch.from_arrays([built[name] for name in ARROW_SCHEMA.names], schema=ARROW_SCHEMA)
    staged, keep = stage_typed(file.columns, path, typing) if typing is not None else ([], None)
    if staged:
        yield _staged_rows(staged, batch, path)
        batch = batch.filter(keep)
    for start in range(0, batch.num_rows, _BATCH_ROWS):
        yield batch.slice(start, _BATCH_ROWS)


def _staged_rows(staged: list[Staged], batch: pa.RecordBatch, path: str) -> pa.RecordBatch:
    """A row for each log file a worker wrote, and a row for each shape first seen among its events."""
    rows: dict[str, list[Any]] = {name: [] for name in ARROW_SCHEMA.names}
    shapes = batch.column("shape")
    for s in staged:
        mine = pc.and_(pc.equal(batch.column("collection"), s.collection), pc.is_valid(shapes))
        seen = shapes.filter(pc.fill_null(mine, False)).to_pylist()
        for shape, staged_path, tally in [(None, s.path, list(s.tally)), *((t, None, None) for t in seen)]:
            values = {"collection": s.collection, "position": s.last if staged_path else None, "file": path,
                      "shape": shape, "staged": staged_path, "tally": tally}  # fmt: skip
            for name, column in rows.items():
                column.append(values.get(name))
    return pa.RecordBatch.from_pydict(rows, schema=ARROW_SCHEMA)


def parse_contents(
    files: Iterable[tuple[str, Any]], options: ParseOptions, typing: Typing | None = None
) -> Iterator[pa.RecordBatch]:
    """Whole files, ``(path, bytes or a buffer)``, to the parsed rows (``PARSED_SCHEMA``): in C where a
    file holds only the common PostgreSQL record (``ingest.plain``), else by the Python parser.
    ``typing``: what the workers type and write themselves of a file read in C."""
    out = ParsedColumns()
    in_c = options.format != "dataworks"  # a DataWorks file holds no Debezium record
    for path, content in files:
        plain = parse_file(content, out.shapes) if in_c else None
        if plain is not None:
            if len(out):
                yield out.flush()
            yield from _plain_batches(plain, path, typing)
            continue
        data = content if isinstance(content, bytes) else memoryview(content).tobytes()
        lines = file_records(data)  # lines, or the events of one JSON document, as `events parse` reads
        seen: set[str | None] = set()  # collections of this file whose wrapper was looked at
        schemas: dict[str, Any] = {}  # what the file's schema line defined
        for lineno, item in parse_lines(lines, path, options, schemas):
            if isinstance(item, Quarantined):
                out.add_quarantined(item, path, lineno)
            else:
                out.add_events(item, path, lineno, lines[lineno - 1], seen, schemas)
            if len(out) >= _BATCH_ROWS:
                yield out.flush()
    if len(out):
        yield out.flush()


def parse_batches(
    batches: Iterator[pa.RecordBatch], options: ParseOptions, typing: Typing | None = None
) -> Iterator[pa.RecordBatch]:
    """``(path, content)`` batches, as the ``binaryFile`` source gives them, to the parsed rows."""
    for batch in batches:
        contents = batch.column("content")
        files = ((path, contents[i].as_buffer()) for i, path in enumerate(batch.column("path").to_pylist()))
        yield from parse_contents(files, options, typing)


def _read_paths(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[str, bytes]]:
    """``(path, origin)`` batches: each local file read by the worker, named by its origin."""
    for batch in batches:
        for path, origin in zip(
            batch.column("path").to_pylist(), batch.column("origin").to_pylist(), strict=True
        ):
            with open(path, "rb") as fh:
                yield origin, fh.read()


def parse_landing_files(
    files: DataFrame, options: ParseOptions = DEFAULT_OPTIONS, typing: Typing | None = None
) -> DataFrame:
    """``(path, content)`` rows, as the ``binaryFile`` source gives them, to parsed rows.

    Events and quarantined records come out together; split them with :func:`events_only` and
    :func:`quarantined_only`.
    """
    return files.select("path", "content").mapInArrow(
        lambda it: parse_batches(it, options, typing), PARSED_SCHEMA
    )


def file_origin(path: Path) -> str:
    """A local file as the ``binaryFile`` source names it (``file:`` and its absolute path): the rows'
    ``file``, whichever way the file was read."""
    return "file:" + str(path.absolute())


def parse_local_files(
    spark: SparkSession,
    paths: Sequence[Path],
    options: ParseOptions = DEFAULT_OPTIONS,
    typing: Typing | None = None,
) -> DataFrame:
    """Local files to parsed rows, each read by the Python worker that parses it: their bytes never pass
    through the JVM, where ``binaryFile`` holds each file as one array on the heap (a 50 MB landing file
    is a humongous object of the G1 collector) and then sends it to the worker. One task a file (up to
    4,096 tasks)."""
    named = [(str(p), file_origin(p)) for p in paths]
    tasks = max(1, min(len(named), _MAX_TASKS))
    frame = spark.createDataFrame(named, "path string, origin string").repartition(tasks)
    return frame.mapInArrow(lambda it: parse_contents(_read_paths(it), options, typing), PARSED_SCHEMA)


def events_only(parsed: DataFrame, columns: Sequence[str] = EVENT_COLUMNS) -> DataFrame:
    return parsed.where(F.col("quarantine_reason").isNull()).select(*columns)


def quarantined_only(parsed: DataFrame) -> DataFrame:
    return parsed.where(F.col("quarantine_reason").isNotNull()).select(*QUARANTINE_COLUMNS)


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
