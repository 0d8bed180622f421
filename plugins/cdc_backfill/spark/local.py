"""Frames built on the driver from what it holds, without a Python worker. ``createDataFrame`` of Python
rows is an RDD of pickled rows: the first job that reads it starts Python worker processes to unpickle
them (0.7-0.9 s on 2 cores, seen in every small reconcile), where the rows are a handful or none."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import types as T


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
