"""Frames from the driver's own rows, read by the JVM alone: the same rows and schema as
``createDataFrame``, with no Python rows for a worker process to unpickle."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import Row
from pyspark.sql import types as T

from cdc_backfill.spark.driver_frames import LISTING_THRESHOLD, empty_frame, local_frame, parquet_files

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


def jobs_while(spark, group: str, make):  # type: ignore[no-untyped-def]
    """The frame ``make()`` returns and the Spark jobs run while it was made."""
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        df = make()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return df, len(sc.statusTracker().getJobIdsForGroup(group))


def test_many_local_files_are_listed_without_a_job(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    paths = []
    for i in range(40):  # over Spark's 32 paths, above which it lists them in a job
        paths.append(str(tmp_path / f"c-{i:02}.parquet"))
        pq.write_table(pa.table({"id": [i, i + 100]}), paths[-1])
    schema = T.StructType([T.StructField("id", T.LongType())])
    before = spark.conf.get(LISTING_THRESHOLD, None)

    df, jobs = jobs_while(spark, "listed-on-the-driver", lambda: parquet_files(spark, paths, schema))
    assert jobs == 0
    assert sorted(r.id for r in df.collect()) == sorted([*range(40), *range(100, 140)])
    assert spark.conf.get(LISTING_THRESHOLD, None) == before  # put back

    # what the setting saves: Spark's own read of the same paths lists them in a job
    _, jobs = jobs_while(spark, "listed-by-a-job", lambda: spark.read.schema(schema).parquet(*paths))
    assert jobs == 1


def test_files_without_a_schema_are_read_with_the_one_spark_infers_without_its_job(spark, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Every Arrow type a snapshot chunk stores (``pgtypes.arrow_type``): the schema read from the first
    file's footer is the one Spark's inference finds, and no Spark job reads the footer."""
    import datetime as dt
    from decimal import Decimal

    table = pa.table({
        "s": pa.array([1], pa.int16()), "i": pa.array([1], pa.int32()), "l": pa.array([1], pa.int64()),
        "r": pa.array([1.5], pa.float32()), "d": pa.array([1.5], pa.float64()), "b": pa.array([True]),
        "day": pa.array([dt.date(2024, 1, 2)]), "n": pa.array([Decimal("1.25")], pa.decimal128(12, 2)),
        "ts": pa.array([dt.datetime(2024, 1, 2, 3)], pa.timestamp("us")),
        "tz": pa.array([dt.datetime(2024, 1, 2, 3, tzinfo=dt.UTC)], pa.timestamp("us", tz="UTC")),
        "t": pa.array(["x"]), "bin": pa.array([b"\x00"], pa.binary()),
    })  # fmt: skip
    path = str(tmp_path / "chunk.parquet")
    pq.write_table(table.replace_schema_metadata({"cdc.collection": "public.t"}), path)
    df, jobs = jobs_while(spark, "schema-from-the-footer", lambda: parquet_files(spark, [path]))
    assert jobs == 0
    assert df.schema == spark.read.parquet(path).schema
    assert df.collect() == spark.read.parquet(path).collect()
