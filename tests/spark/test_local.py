"""Frames from the driver's own rows, read by the JVM alone: the same rows and schema as
``createDataFrame``, with no Python rows for a worker process to unpickle."""

from __future__ import annotations

import pytest
from pyspark.sql import Row
from pyspark.sql import types as T

from cdc_backfill.spark.local import empty_frame, local_frame

pytestmark = [pytest.mark.spark]

SCHEMA = T.StructType([
    T.StructField("_cdc_chunk_id", T.StringType()),
    T.StructField("_cdc_low", T.BinaryType()),
    T.StructField("_cdc_high", T.BinaryType()),
    T.StructField("n", T.LongType(), nullable=False),
])  # fmt: skip


def plan(df) -> str:  # type: ignore[no-untyped-def]
    return df._jdf.queryExecution().executedPlan().toString()


def test_rows_come_back_as_they_were_collected(spark) -> None:  # type: ignore[no-untyped-def]
    rows = [Row(_cdc_chunk_id="c-1", _cdc_low=b"\x01\x02", _cdc_high=None, n=3),
            Row(_cdc_chunk_id=None, _cdc_low=b"", _cdc_high=b"\xff", n=0)]  # fmt: skip
    df = local_frame(spark, spark.createDataFrame(rows, SCHEMA).collect(), SCHEMA)
    assert df.schema == SCHEMA
    assert sorted(df.collect(), key=str) == sorted(
        [Row(_cdc_chunk_id="c-1", _cdc_low=bytearray(b"\x01\x02"), _cdc_high=None, n=3),
         Row(_cdc_chunk_id=None, _cdc_low=bytearray(b""), _cdc_high=bytearray(b"\xff"), n=0)], key=str
    )  # fmt: skip
    assert "ExistingRDD" not in plan(df)  # an RDD of pickled rows is what boots a Python worker


def test_no_rows_read_no_partition(spark) -> None:  # type: ignore[no-untyped-def]
    for df in (
        empty_frame(spark, SCHEMA),
        local_frame(spark, [], SCHEMA),
        empty_frame(spark, "position binary"),
    ):
        assert df.collect() == [] and df._jdf.rdd().getNumPartitions() == 0
    assert empty_frame(spark, SCHEMA).schema == SCHEMA
