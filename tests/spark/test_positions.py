"""Position keys built in the JVM are the bytes ``position_key`` writes, and Spark orders them as
positions."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from cdc_backfill.events.positions import position_key
from cdc_backfill.spark.positions import key_literal, key_of_longs, position_of

pytestmark = pytest.mark.spark

VALUES = [0, 1, 15, 16, 255, 256, 65_535, 65_536, 2**31, 2**40 + 7, 2**63 - 1]


def test_keys_of_longs_are_position_keys(spark) -> None:  # type: ignore[no-untyped-def]
    pairs = [(a, b) for a in VALUES for b in VALUES[::3]]
    df = spark.createDataFrame(pairs, "a long, b long")
    got = df.select("a", "b", key_of_longs(F.col("a"), F.col("b")).alias("k")).collect()
    assert {(r.a, r.b): bytes(r.k) for r in got} == {p: position_key(p) for p in pairs}


def test_spark_orders_keys_as_positions(spark) -> None:  # type: ignore[no-untyped-def]
    positions = [(1,), (1, 0), (1, 5), (2,), (255, 1), (256,), (16**20 - 1, 0), (3, 2**70)]
    df = spark.createDataFrame([(bytearray(position_key(p)),) for p in positions], "k binary")
    assert [position_of(r.k) for r in df.orderBy("k").collect()] == sorted(positions)
    assert df.where(F.col("k") > key_literal((2,))).count() == sum(p > (2,) for p in positions)
