"""READ rows placed for the merge: every column typed as the log types it and sent, whatever its name."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.spark.merge import placed_reads
from cdc_backfill.reconcile.spark.sort_key import POSITION, PRIORITY

pytestmark = [pytest.mark.spark]

COLUMNS = [
    PgColumn("id", "bigint", 20, nullable=False),
    PgColumn("it's", "text", 25),
    PgColumn("a\\b", "integer", 23),
]


def test_read_rows_keep_odd_names_and_take_the_log_types(spark) -> None:  # type: ignore[no-untyped-def]
    # "a\b" comes as a long (not the log's integer): cast; the others are of their type: kept as they are
    schema = T.StructType([
        T.StructField("id", T.LongType()), T.StructField("it's", T.StringType()),
        T.StructField("a\\b", T.LongType()), T.StructField("_cdc_high", T.BinaryType()),
    ])  # fmt: skip
    df = spark.createDataFrame([(1, "x", 7, b"\x01")], schema)
    out = placed_reads(df, COLUMNS, "_cdc_high", 1)
    types = {f.name: f.dataType for f in out.schema.fields}
    assert (
        types["id"] == T.LongType() and types["it's"] == T.StringType() and types["a\\b"] == T.IntegerType()
    )
    row = out.first()
    assert row["_cdc_present"].asDict() == {"id": True, "it's": True, "a\\b": True}
    assert (row["it's"], row["a\\b"], row[POSITION], row[PRIORITY], row["_cdc_deleted"]) == (
        "x",
        7,
        b"\x01",
        1,
        False,
    )
