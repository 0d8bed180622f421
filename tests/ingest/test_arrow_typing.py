"""The worker's typing of a C-read file (``ingest.arrow_typing``) gives the rows the JVM's typing gives
(``eventlog.spark.rows.as_log_rows``) for the same events, or leaves the events to the JVM: never a
different value."""

from __future__ import annotations

import json
import random
from typing import Any

import pyarrow as pa
import pytest

from cdc_backfill.eventlog.schema import LogVersion
from cdc_backfill.events.parse import DEFAULT_OPTIONS
from cdc_backfill.ingest import plain
from cdc_backfill.ingest.arrow_typing import json_type, typed_events
from cdc_backfill.ingest.spark.parse import ARROW_SCHEMA, parse_contents
from cdc_backfill.landing.spark.rows import as_log_rows
from cdc_backfill.pgtypes import PgColumn
from tests.support.records import capture_record, changed

COLLECTION = "public.t"
ORIGIN = "file:/landing/stream/a.jsonl"
COLUMNS = [
    PgColumn("id", "bigint", 20),
    PgColumn("s", "smallint", 21),
    PgColumn("i", "integer", 23),
    PgColumn("f", "double precision", 701),
    PgColumn("b", "boolean", 16),
    PgColumn("n", "numeric(12,2)", 1700),
    PgColumn("day", "date", 1082),
    PgColumn("at", "timestamp without time zone", 1114),
    PgColumn("tz", "timestamp with time zone", 1184),
    PgColumn("t", "text", 25),
    PgColumn("u", "uuid", 2950),
    PgColumn("j", "jsonb", 3802),
]
VERSION = LogVersion(1, tuple(COLUMNS))


def _row(rng: random.Random, k: int) -> dict[str, Any]:
    texts = ["", "plain", 'é "q" \\ / \u2028 \U0001f600', "tab\tnew\nline", "\u0000x", "a" * 300]
    return {
        "id": k,
        "s": rng.choice([None, -32768, 32767, 0, rng.randint(-300, 300)]),
        "i": rng.choice([None, -(2**31), 2**31 - 1, rng.randint(-(10**6), 10**6)]),
        "f": rng.choice([None, 0.0, -0.0, 0.1, 123456789.125, rng.uniform(-1e9, 1e9)]),  # no exponent: the C reader leaves those to Python
        "b": rng.choice([None, True, False]),
        "n": rng.choice([None, "0.00", "-0.01", "9999999999.99", f"{rng.randint(-10**9, 10**9)}.{rng.randint(0, 99):02d}", "7", "3.5"]),
        "day": rng.choice([None, 0, -719162, 2932896, rng.randint(-10**5, 10**5)]),
        "at": rng.choice([None, 0, -62135596800000000, rng.randint(-(10**15), 10**16)]),
        "tz": rng.choice([None, "2024-01-01T00:00:00Z", "1970-01-01T00:00:00.000001Z", "2024-02-29T23:59:59.999999+05:30",
                          "0001-01-01T00:00:00-08:00", "2024-06-30T12:00:00.5Z"]),
        "t": rng.choice([None, *texts]),
        "u": rng.choice([None, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]),
        "j": rng.choice([None, '{"a": [1, 2]}', "[]"]),
    }  # fmt: skip


def _lines(records: list[dict[str, Any]]) -> bytes:
    """JSON lines, every other one with its non-ASCII text escaped (``\\uXXXX``)."""
    return b"".join(json.dumps(r, ensure_ascii=i % 2 == 0).encode() + b"\n" for i, r in enumerate(records))


def _records(seed: int, n: int = 300) -> list[dict[str, Any]]:
    """Creates, updates, deletes (the key from the record's key) and another table's events."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.randint(1, 40)
        op = rng.choice("cud")
        record = capture_record(op, k, 100 + 10 * i, 105 + 10 * i)
        if op != "d":
            record = changed(record, ("value", "after"), _row(rng, k))
        if rng.random() < 0.1:
            record = changed(record, ("value", "source", "table"), "other")
        out.append(record)
    return out


def _typed(records: list[dict[str, Any]], columns: list[PgColumn] = COLUMNS) -> pa.Table | None:
    file = plain.parse_file(_lines(records), set())
    assert file is not None, "the C reader takes these records"
    return typed_events(file.columns, ORIGIN, COLLECTION, LogVersion(1, tuple(columns)), ["id"])


def _jvm(spark: Any, records: list[dict[str, Any]], columns: list[PgColumn] = COLUMNS) -> pa.Table:
    parsed = pa.Table.from_batches(
        list(parse_contents([(ORIGIN, _lines(records))], DEFAULT_OPTIONS)), ARROW_SCHEMA
    )
    schema = LogVersion(1, tuple(columns)).arrow_schema()
    jvm = as_log_rows(spark.createDataFrame(parsed), COLLECTION, columns, ["id"], ts=True)
    return jvm.select(*schema.names).toArrow().cast(schema)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r["_cdc_position"])


@pytest.mark.spark
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_worker_types_as_the_jvm_types(spark: Any, seed: int) -> None:
    records = _records(seed)
    typed = _typed(records)
    assert typed is not None
    assert typed.schema == VERSION.arrow_schema()
    assert _rows(typed) == _rows(_jvm(spark, records))


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("n", "1e2"),  # an exponent: Spark's cast reads it, the strict form does not
        ("n", 1.5),  # a decimal as a JSON number (Debezium's double mode)
        ("n", "1.234"),  # more digits than its scale: Spark rounds
        ("n", " 1.50"),
        ("s", 40000),  # beyond smallint
        ("i", "12"),  # a number as text
        ("f", "NaN"),
        ("tz", "2024-01-01T00:00:00"),  # no zone
        ("tz", "2024-01-01 00:00:00Z"),
        ("tz", "2024-01-01T00:00:00.1234567Z"),  # below a microsecond
        ("tz", "2024-02-30T00:00:00Z"),
        ("at", "2024-01-01T00:00:00"),  # ISO text (a wrapper the C reader never sees)
        ("day", 1.5),
        ("t", 5),  # a number where text is
        ("j", {"a": 1}),  # an object where text is
    ],
)
def test_a_value_of_another_form_is_left_to_the_jvm(column: str, value: Any) -> None:
    records = _records(4, n=30)
    at = next(
        i for i, r in enumerate(records) if r["value"]["after"] and r["value"]["source"]["table"] == "t"
    )
    records[at] = changed(records[at], ("value", "after", column), value)
    assert _typed(records) is None


@pytest.mark.parametrize(
    ("column", "readable"),
    [
        (PgColumn("x", "bytea", 17), False),
        (PgColumn("x", "time without time zone", 1083), False),
        (PgColumn("x", "integer[]", 1007), False),
        (PgColumn("x", "real", 700), False),
        (PgColumn("x", "numeric", 1700), False),
        (PgColumn("x", "numeric(40,2)", 1700), False),
        (PgColumn("x", "character varying(20)", 1043), True),
        (PgColumn("x", "interval", 1186), True),  # read as text: a number there is left to the JVM
    ],
)
def test_kinds_the_worker_reads(column: PgColumn, readable: bool) -> None:
    assert (json_type(column) is not None) is readable


def test_a_collection_with_a_kind_it_does_not_read_is_left_whole() -> None:
    file = plain.parse_file(_lines(_records(5, n=10)), set())
    assert file is not None
    version = LogVersion(1, (PgColumn("id", "bigint", 20), PgColumn("x", "bytea", 17)))
    assert typed_events(file.columns, ORIGIN, COLLECTION, version, ["id"]) is None


def test_a_delete_takes_its_key_from_the_records_key() -> None:
    records = [capture_record("c", 3, 10, 20), capture_record("d", 3, 30, 40)]
    file = plain.parse_file(_lines(records), set())
    assert file is not None
    version = LogVersion(1, (PgColumn("id", "bigint", 20), PgColumn("name", "text", 25)))
    typed = typed_events(file.columns, ORIGIN, COLLECTION, version, ["id"])
    assert typed is not None
    rows = typed.select(["_cdc_op", "id", "name"]).to_pylist()
    assert rows == [{"_cdc_op": "c", "id": 3, "name": "n3"}, {"_cdc_op": "d", "id": 3, "name": None}]
