"""The two sides agree: counts and hashes computed by SQL in PostgreSQL and by Spark on a state that the
snapshot engine read, for every column type, every key type and text keys under a collation that orders
unlike bytes; and they disagree exactly where one value changes."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from pyspark.sql import functions as F

from tests.support.pg import sql
from tests.support.tamper import range_of, snapshot_state, verify

pytestmark = [pytest.mark.pg, pytest.mark.spark]

EVERYTHING = """
CREATE TABLE everything (
    id integer PRIMARY KEY, i2 smallint, i8 bigint,
    n numeric, n12 numeric(12,2), n38 numeric(38,10), n50 numeric(50,5),
    r real, d double precision, t text, vc varchar(20), ch character(5), b boolean,
    dt date, ts timestamp, ts3 timestamp(3), tstz timestamptz, by bytea, j json, jb jsonb, u uuid,
    ai integer[], at text[]
)"""
ROWS = [
    "INSERT INTO everything (id) VALUES (1)",  # every value NULL
    """INSERT INTO everything VALUES (2, -32768, -9223372036854775808,
        '-123456789012345678901234567890.000100', -9999999999.99, '-1234567890123456789012345678.0123456789',
        '123456789012345678901234567890123456789012345.12340', '-0', 'NaN', '', 'N', 'a', false,
        '0001-01-01', '1900-01-01 00:00:00.000001', '1969-12-31 23:59:59.999', '1969-12-31 23:59:59.999999+00',
        '\\x00', '{"a": [1, 2.50]}', '{"b": 1, "a": "x"}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{}', '{}')""",
    """INSERT INTO everything VALUES (3, 32767, 9223372036854775807, '0.0000000001', 0, 0, 0,
        'Infinity', '-Infinity', 'héllo wörld 😀 ✓ ' || chr(120143) || ' ǅ', 'ñ:%''\\', 'ab  ', true,
        '9999-12-31', '2262-04-11 23:47:16.854775', '2038-01-19 03:14:07.999', '2024-03-10 02:30:00.5-05',
        '\\xdeadbeef00ff', '[]', '{"k": "ü 😀", "n": null}', '00000000-0000-0000-0000-000000000000',
        '{1,NULL,-3}', '{"a b",NULL,"\\"q\\"","N",""}')""",
]
# ordinary rows: every type with values that vary
MANY = """INSERT INTO everything SELECT i, i % 300 - 150, i * 1000003, (i * 1.5)::numeric / 7, i * 1.25,
        i * 3.0001, i * 10.5, i / 3.0, i / 7.0, 'text ' || i, 'v' || i, left(md5(i::text), 3),
        i % 2 = 0, DATE '2000-01-01' + i, TIMESTAMP '2020-01-01' + i * INTERVAL '1 hour 1.000001 second',
        TIMESTAMP '2020-01-01' + i * INTERVAL '1 day', TIMESTAMPTZ '2020-01-01 00:00:00+02' + i * INTERVAL '37 minutes',
        decode(md5(i::text), 'hex'), json_build_object('i', i), jsonb_build_object('i', i, 'a', ARRAY[i]),
        md5(i::text)::uuid, ARRAY[i, i + 1], ARRAY['x' || i]
        FROM generate_series(4, {last}) i"""


def test_every_type_hashes_the_same_on_both_sides(fresh_db: str, tmp_path: Path, spark) -> None:  # type: ignore[no-untyped-def]
    sql(fresh_db, EVERYTHING, *ROWS, MANY.format(last=200))
    state = snapshot_state(spark, fresh_db, tmp_path, "public.everything")["public.everything"]
    assert state.count() == 200
    report = verify(fresh_db, "public.everything", state, ranges=8)
    assert report.all_equal, report.to_dict()
    assert [r.source.rows for r in report.results] == [25] * 8

    # one value changed in the source: exactly the range holding it differs
    sql(fresh_db, "UPDATE everything SET ts = ts + INTERVAL '1 microsecond' WHERE id = 117")
    changed = verify(fresh_db, "public.everything", state, ranges=8)
    assert changed.differing == [
        range_of(
            changed, lambda lo, hi: (lo is None or int(lo[0]) < 117) and (hi is None or 117 <= int(hi[0]))
        )
    ]
    sql(fresh_db, "UPDATE everything SET ts = ts - INTERVAL '1 microsecond' WHERE id = 117")
    assert verify(fresh_db, "public.everything", state, ranges=8).all_equal


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("t", "CASE WHEN id = 1 THEN '' ELSE t END"),  # NULL -> empty text
        ("vc", "CASE WHEN id = 1 THEN 'N' ELSE vc END"),  # NULL -> the NULL marker's letter
        ("r", "CASE WHEN id = 2 THEN 0 ELSE r END"),  # -0.0 -> 0.0
        ("ch", "CASE WHEN id = 3 THEN 'ab ' ELSE ch END"),  # equal for PostgreSQL: no difference
        ("ai", "CASE WHEN id = 2 THEN '{NULL}' ELSE ai END"),  # {} -> {NULL}
        ("n", "CASE WHEN id = 4 THEN n * 1.0 ELSE n END"),  # 0.21428... -> the same number, longer scale
    ],
)
def test_edge_values_differ_where_they_should(
    fresh_db: str, tmp_path: Path, spark, column: str, value: str
) -> None:  # type: ignore[no-untyped-def]
    sql(fresh_db, EVERYTHING, *ROWS, MANY.format(last=10))
    state = snapshot_state(spark, fresh_db, tmp_path, "public.everything")["public.everything"]
    assert verify(fresh_db, "public.everything", state, ranges=1).all_equal
    sql(fresh_db, f"UPDATE everything SET {column} = {value}")
    same = column in ("ch", "n")  # bpchar ignores trailing blanks; numerics compare as numbers
    assert verify(fresh_db, "public.everything", state, ranges=1).all_equal is same


KEY_TYPES = {
    "bigint": "i * 7919 - 400000",
    "numeric(12,2)": "i * 1.37 - 50",
    "numeric": "(i * 1.37 - 50)::numeric",
    "real": "i / 3.0 - 20",
    "double precision": "i / 7.0 - 20",
    "date": "DATE '1960-01-01' + i * 97",
    "timestamp": "TIMESTAMP '1960-01-01' + i * INTERVAL '97 days 1.5 seconds'",
    "timestamptz": "TIMESTAMPTZ '1960-01-01 00:00:00+05' + i * INTERVAL '97 days 1.5 seconds'",
    "bytea": "decode(md5(i::text), 'hex')",
    "uuid": "md5(i::text)::uuid",
    "text": "(ARRAY['apple', 'Apple', '_x', 'Zebra', 'é', 'e', 'a:b', '100%', 'it''s', ''])[i % 10 + 1] || (i / 10)",
    "character(4)": "to_hex(i * 37)",  # 2 to 4 characters, padded
    "jsonb": "jsonb_build_object('k', i)",
}


@pytest.mark.parametrize("key_type", list(KEY_TYPES))
def test_every_key_type_cuts_the_same_ranges_on_both_sides(
    fresh_db: str, tmp_path: Path, spark, key_type: str
) -> None:  # type: ignore[no-untyped-def]
    sql(
        fresh_db,
        f"CREATE TABLE keyed (k {key_type} PRIMARY KEY, v int)",
        f"INSERT INTO keyed SELECT {KEY_TYPES[key_type]}, i FROM generate_series(1, 97) i",
    )
    state = snapshot_state(spark, fresh_db, tmp_path, "public.keyed")["public.keyed"]
    report = verify(fresh_db, "public.keyed", state, ranges=7)
    # equal counts per range mean Spark put every key in the range PostgreSQL put it in
    assert report.all_equal, report.to_dict()["ranges"]
    assert len(report.results) == 7 and all(13 <= r.source.rows <= 14 for r in report.results)
    # a key only in the state (deleted in the source) falls in a range and makes it differ
    sql(fresh_db, "DELETE FROM keyed WHERE v = 50")
    assert len(verify(fresh_db, "public.keyed", state, ranges=7).differing) == 1


def test_text_keys_under_an_icu_collation_are_ranged_by_bytes(icu_server, tmp_path: Path, spark) -> None:  # type: ignore[no-untyped-def]
    url = icu_server.url.rsplit("/", 1)[0] + "/verify_icu"
    admin = sa.create_engine(icu_server.url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text("DROP DATABASE IF EXISTS verify_icu"))
        conn.execute(sa.text("CREATE DATABASE verify_icu"))
    admin.dispose()
    sql(
        url,
        'CREATE TABLE words (w text COLLATE "en-US-x-icu", n int, v text, PRIMARY KEY (w, n))',
        "INSERT INTO words SELECT w || (i % 3), i, md5(i::text) FROM unnest(ARRAY['apple', 'Apple', '_under', "
        "'Zebra', 'zebra', 'émile', 'Eve', 'eve', '-dash', '10', '9', 'ä', 'b', 'B']) w, generate_series(1, 9) i",
    )
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        icu = [r[0] for r in conn.execute(sa.text("SELECT w FROM words ORDER BY w, n"))]
    engine.dispose()
    assert icu != sorted(icu, key=lambda w: w.encode()), "the collation must order unlike bytes"
    state = snapshot_state(spark, url, tmp_path, "public.words")["public.words"]
    report = verify(url, "public.words", state, ranges=9)
    assert report.all_equal, report.to_dict()["ranges"]
    assert len(report.results) == 9
    # the state changed by hand in one row: only its range differs
    tampered = state.withColumn(
        "v", F.when((F.col("w") == "Zebra1") & (F.col("n") == 4), "x").otherwise(F.col("v"))
    )
    assert len(verify(url, "public.words", tampered, ranges=9).differing) == 1
