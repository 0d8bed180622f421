"""Frames built on the driver from what it holds, without a Python worker. ``createDataFrame`` of Python
rows is an RDD of pickled rows: the first job that reads it starts Python worker processes to unpickle
them (0.7-0.9 s on 2 cores, seen in every small reconcile), where the rows are a handful or none.
Likewise a read of many local files is listed by the driver, not by a job."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import types as T

from cdc_backfill.lakepath import lake_path


def empty_frame(spark: SparkSession, schema: T.StructType | str) -> DataFrame:
    """No rows, with ``schema``: over an RDD of no partitions, which no task reads."""
    return spark.createDataFrame(spark.sparkContext.emptyRDD(), schema)


def local_frame(spark: SparkSession, rows: Sequence[Row], schema: T.StructType) -> DataFrame:
    """``rows`` (collected from a frame of ``schema``) as a frame again, sent to the JVM as Arrow: the
    JVM decodes it, no Python worker does."""
    if not rows:
        return empty_frame(spark, schema)
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    table = pa.Table.from_pylist([r.asDict(recursive=True) for r in rows], schema=to_arrow_schema(schema))
    return spark.createDataFrame(table, schema)


# Above this many paths Spark lists them in a job of its own: 0.36 s for a 10M reconcile's 100 READ
# chunk files on 2 cores, where the driver stats local files in milliseconds.
LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"
SPARK_LISTING_THRESHOLD = 32  # its default
_listing = threading.Lock()  # the setting is the session's: one read at a time raises it


def parquet_files(spark: SparkSession, paths: Sequence[str], schema: T.StructType | None = None) -> DataFrame:
    """The Parquet files ``paths`` as one frame (with ``schema``, else the first file's own, as Spark
    would infer it). Local files are listed on the driver however many they are; files on S3 keep
    Spark's parallel listing, as the driver would stat them one request at a time."""
    if schema is None and paths:
        schema = footer_schema(spark, paths[0])
    reader = spark.read.schema(schema) if schema is not None else spark.read
    local = all(isinstance(lake_path(p), Path) for p in paths)  # the lake's one rule for where a path is
    if len(paths) <= SPARK_LISTING_THRESHOLD or not local:
        return reader.parquet(*paths)
    with _listing:  # the listing happens as the frame is made, so the setting is put back right after
        before = spark.conf.get(LISTING_THRESHOLD, None)
        spark.conf.set(LISTING_THRESHOLD, str(len(paths)))
        try:
            return reader.parquet(*paths)
        finally:
            if before is None:
                spark.conf.unset(LISTING_THRESHOLD)
            else:
                spark.conf.set(LISTING_THRESHOLD, before)


def footer_schema(spark: SparkSession, path: str) -> T.StructType | None:
    """A Parquet file's schema as Spark infers it, from its footer read here: Spark's inference is a job
    of its own (0.1 s of a warm 1M-event reconcile, for its READ chunks). None where an Arrow type has no
    Spark type here; Spark then infers it."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from cdc_backfill.lakepath import parquet_schema

    # Spark reads a timestamp not adjusted to UTC as timestamp_ntz where this is on (its default)
    ntz = str(spark.conf.get("spark.sql.parquet.inferTimestampNTZ.enabled", "true")).lower() == "true"
    try:
        return from_arrow_schema(parquet_schema(path).remove_metadata(), prefer_timestamp_ntz=ntz)
    except (TypeError, NotImplementedError, ValueError):
        return None
