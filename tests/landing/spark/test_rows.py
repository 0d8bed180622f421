"""Canonical events (JSON text) typed into log rows: each value in its column's type, and each event's
JSON parsed once however many columns it has."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from pyspark.sql import types as T

from cdc_backfill.landing.spark.rows import as_log_rows
from cdc_backfill.pgtypes import PgColumn

pytestmark = pytest.mark.spark

COLUMNS = [PgColumn("id", "bigint", 0), PgColumn("name", "text", 1), PgColumn("balance", "numeric(12,2)", 2),
           PgColumn("active", "boolean", 3)]  # fmt: skip
EVENTS = T.StructType([T.StructField(n, t) for n, t in [
    ("collection", T.StringType()), ("op", T.StringType()), ("key", T.StringType()), ("after", T.StringType()),
    ("unchanged", T.ArrayType(T.StringType())), ("position", T.BinaryType()), ("source_ts_ms", T.LongType()),
    ("file", T.StringType()), ("line", T.LongType()),
]])  # fmt: skip


def test_events_are_typed_with_one_parse_of_each_json_text(spark) -> None:  # type: ignore[no-untyped-def]
    events = spark.createDataFrame(
        [
            ("public.t", "c", '{"id":1}', '{"id":1,"name":"a","balance":"12.50","active":true}', [], b"\x01\x01", 5, "f", 1),
            ("public.t", "d", '{"id":2}', None, [], b"\x01\x02", 6, "f", 2),
            ("public.u", "c", '{"id":3}', '{"id":3}', [], b"\x01\x03", 7, "f", 3),
        ],
        EVENTS,
    )  # fmt: skip
    rows = as_log_rows(events, "public.t", COLUMNS, ["id"])
    got = sorted((r.id, r.name, r.balance, r.active, r._cdc_op) for r in rows.collect())
    assert got == [
        (1, "a", Decimal("12.50"), True, "c"),
        (2, None, None, None, "d"),
    ]  # a delete keeps its key

    plan = rows._jdf.queryExecution().executedPlan().toString()
    parses = re.findall(r"from_json\(StructField.*?, (CASE WHEN .*? THEN )?(after|key)#\d+", plan)
    assert sorted(text for _, text in parses) == ["after", "key"]
    # the key's text only where the row lacks its value (a delete's)
    (when,) = [when for when, text in parses if text == "key"]
    assert when.startswith("CASE WHEN isnull(_cdc_after")
