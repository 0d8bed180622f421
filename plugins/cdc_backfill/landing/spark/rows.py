"""Log rows: one collection's events in the typed event log's shape (``eventlog.schema``), the one input
the reconcile's rules read.

Columns: ``_cdc_position`` (binary key), ``_cdc_op``, ``_cdc_unchanged``, ``_cdc_origin``,
``_cdc_line`` and the collection's columns in their Spark types (``spark_type``, what Spark reads from
a snapshot chunk and from a log file alike). The signal collection's rows have ``id``, ``type`` and
``data`` as text.

They come from the log's files as they are (:func:`read_log_rows`); ``ingest`` makes them from
canonical events parsed out of JSON lines (:func:`as_log_rows`, :func:`as_signal_rows`), which types
each value once, here.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from functools import reduce
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_backfill.eventlog.schema import LINE, OP, OPS, ORIGIN, POSITION, TS_MS, UNCHANGED
from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.layout import LOG_DIR
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.spark.column_types import event_schema, from_debezium, spark_type
from cdc_backfill.spark.positions import POSITION_TYPE

SIGNAL_COLUMNS = ("id", "type", "data")
META_COLUMNS = (POSITION, OP, UNCHANGED, ORIGIN, LINE)
_META_TYPES = {
    POSITION: POSITION_TYPE,
    OP: T.StringType(),
    UNCHANGED: T.ArrayType(T.StringType()),
    ORIGIN: T.StringType(),
    LINE: T.LongType(),
}


def log_schema(columns: Sequence[PgColumn]) -> T.StructType:
    """The Spark schema of a collection's log rows."""
    return T.StructType(
        [T.StructField(n, _META_TYPES[n]) for n in META_COLUMNS]
        + [T.StructField(c.name, spark_type(c)) for c in columns]
    )


def signal_schema() -> T.StructType:
    return T.StructType(
        [T.StructField(n, _META_TYPES[n]) for n in META_COLUMNS]
        + [T.StructField(n, T.StringType()) for n in SIGNAL_COLUMNS]
    )


def _meta(events: DataFrame, ts: bool = False) -> list[Column]:
    return [
        F.col("position").alias(POSITION),
        F.col("op").alias(OP),
        *([F.col("source_ts_ms").alias(TS_MS)] if ts else []),
        F.col("unchanged").alias(UNCHANGED),
        F.col("file").alias(ORIGIN),
        F.col("line").alias(LINE),
    ]


def as_log_rows(
    events: DataFrame, collection: str, columns: Sequence[PgColumn], key: Sequence[str], ts: bool = False
) -> DataFrame:
    """The collection's canonical events (``ingest.spark.parse``: ``key`` and ``after`` as JSON text) as log
    rows: a delete keeps its key's values, a truncate none (``ts``: with the source timestamp, as the
    log's files keep it)."""
    schema = event_schema(columns)
    key_schema = T.StructType([f for f in schema.fields if f.name in key])
    ev = events.where((F.col("collection") == collection) & F.col("op").isin(*OPS))
    # Each JSON text parsed once, into a column of its own that the typing below reads: named inside
    # each column's expression, the optimizer gives every column a parse of its own (one field each),
    # 7 parses of a row's JSON for a table of 6 columns (2x the time of typing 1M events).
    ev = ev.select(*ev.columns, F.from_json("after", schema).alias("_cdc_after"))
    after = F.col("_cdc_after")
    # The key's text is parsed only where the row lacks a key value (a delete's row, mostly): each
    # from_json costs about a microsecond a row before it reads a byte, as much as the row's own parse
    # (warm, 1M events: 1.4 s for the keys alone, 1.5 s for the rows).
    lacking = reduce(operator.or_, (after.getField(k).isNull() for k in key), F.lit(False))
    ev = ev.select(*ev.columns, F.from_json(F.when(lacking, F.col("key")), key_schema).alias("_cdc_key"))
    key_values = F.col("_cdc_key")
    values = []
    for c in columns:
        value = from_debezium(c, after.getField(c.name))
        if c.name in key:
            value = F.coalesce(value, from_debezium(c, key_values.getField(c.name)))
        values.append(value.cast(spark_type(c)).alias(c.name))
    return ev.select(*_meta(ev, ts), *values)


def as_signal_rows(events: DataFrame, signal_table: str, ts: bool = False) -> DataFrame:
    """The signal collection's canonical events as log rows (``id`` from the key, as a delete has it)."""
    ev = events.where(F.col("collection") == signal_table)
    return ev.select(
        *_meta(ev, ts),
        F.coalesce(F.get_json_object("key", "$.id"), F.get_json_object("after", "$.id")).alias("id"),
        F.get_json_object("after", "$.type").alias("type"),
        F.get_json_object("after", "$.data").alias("data"),
    )


# ---------------------------------------------------------------- the log's files


def collection_log_files(landing: Path, collection: str, files: Sequence[str]) -> list[Path]:
    prefix = f"{collection}/"
    return [lake_path(landing) / LOG_DIR / f for f in files if f.startswith(prefix)]


def read_log_rows(
    spark: SparkSession,
    versions: Mapping[int, Sequence[PgColumn]],
    paths: Sequence[Path],
    target: T.StructType,
) -> DataFrame | None:
    """Log files of one collection (of any schema versions: ``versions`` gives each one's columns, from
    its schema document) as log rows of ``target``: a column a version lacks is null, every column is
    cast to ``target``'s type. Each version is read with its own schema, so Spark runs no job to infer
    one."""
    if not paths:
        return None
    by_version: dict[int, list[str]] = {}
    for p in paths:
        by_version.setdefault(int(p.parent.name[1:]), []).append(str(p))
    frames = []
    for version, group in sorted(by_version.items()):
        schema = log_schema(versions[version])
        read = {f.name: f.dataType for f in schema.fields}
        # a column already of the target's type is selected by name: the whole select is then one call
        # to the JVM, where each column's expression was three, and the frame's columns asked again for each
        frames.append(
            spark.read.schema(schema)
            .parquet(*group)
            .select(
                *[
                    f.name
                    if read.get(f.name) == f.dataType
                    else (F.col(f.name) if f.name in read else F.lit(None)).cast(f.dataType).alias(f.name)
                    for f in target.fields
                ]
            )
        )
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out
