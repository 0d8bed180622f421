"""A query's rows read by ADBC into lake types give the table the stream's text conversion gives for the
same values, on a real server: every type, with the values at their edges."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import psycopg2
import pytest
import sqlalchemy as sa

from cdc_backfill.pg.arrowrows import RowsConnection, RowsError, plain_key, read_rows, text_columns
from cdc_backfill.pg.catalog import table_columns
from cdc_backfill.pg.conninfo import libpq_dsn
from cdc_backfill.pg.csvtext import text_table
from cdc_backfill.pgtypes import PgColumn

pytestmark = pytest.mark.pg


TABLE = """CREATE TABLE edges (
    id bigint PRIMARY KEY, i2 smallint, i4 integer, o oid, f4 real, f8 double precision, b boolean,
    d date, ts timestamp, tstz timestamptz, t3 timestamp(3) with time zone, amount numeric(12,2),
    wide numeric(38,0), fine numeric(38,37), neg numeric(5,4), name text, code character(5),
    label character varying(20), raw bytea, doc json, docb jsonb, u uuid, nm name
)"""

ROWS = [
    "(1, -32768, -2147483648, 4294967295, 'NaN', 'Infinity', true, '0001-01-01', '1999-12-31 23:59:59.999999',"
    " '2000-01-01 00:00:00+00', '2026-11-28 12:34:56.789+05:30', -9999999999.99,"
    " 99999999999999999999999999999999999999, 0.1234567890123456789012345678901234567, -9.9999,"
    " 'say \"hi\", then' || chr(10) || 'leave', 'ab', '', '\\x00ff00'::bytea, '{\"a\": [1, 2.50]}',"
    " '{\"b\": 1, \"a\": \"x\"}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'n')",
    "(2, 32767, 2147483647, 0, '-Infinity', -0.0, false, '2262-04-11', '1970-01-01 00:00:00',"
    " '1969-12-31 23:59:59.999999+00', '4000-01-01 00:00:00+00', 0, -99999999999999999999999999999999999999,"
    " -0.0000000000000000000000000000000000001, 0.0001, '', 'abcde', 'ünïcødé ✓', ''::bytea, 'null',"
    " '[]', '00000000-0000-0000-0000-000000000000', '')",
    "(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " NULL, NULL, NULL, NULL, NULL)",
    "(4, 7, 7, 7, 1.5, 3.141592653589793, true, '2026-11-28', '2026-11-28 04:51:00.000001',"
    " '2026-11-28 04:51:00.000001+00', '1900-06-01 00:00:00+00', 1234.5, 10000, 0.5, 1,"
    " repeat('x', 5000), 'a', 'tab' || chr(9) || 'here', decode(repeat('ab', 3000), 'hex'),"
    " '  {\"spaced\" : true}  ', '{\"n\": 1.50}', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 'x')",
]

# types the lake stores as the server's text
TEXT_TYPES = "ALTER TABLE edges ADD tm time, ADD tz timetz, ADD iv interval, ADD tags text[], ADD big numeric, ADD ip inet"
TEXT_VALUES = """UPDATE edges SET tm = '12:00:01.5', tz = '23:59:59.999999-05:30', iv = '1 year 2 days 00:00:00.5',
    tags = ARRAY['a', 'b c', NULL], big = 'NaN', ip = '10.0.0.1/8' WHERE id = 1;
UPDATE edges SET tm = '00:00', tz = '00:00+00', iv = '-1 day', tags = '{}', big = 12345678901234567890123456789012345678901.5,
    ip = '::1' WHERE id = 4"""


def _copy(conn: Any, sql: str) -> bytes:
    buf = io.BytesIO()
    with conn.cursor() as cur:
        cur.copy_expert(f"COPY ({sql}) TO STDOUT WITH (FORMAT csv)", buf)
    return buf.getvalue()


@pytest.fixture
def edges(fresh_db: str) -> Iterator[tuple[Any, Any, list[PgColumn]]]:
    conn = psycopg2.connect(libpq_dsn(fresh_db, replication=True))
    with conn.cursor() as cur:
        cur.execute(TABLE)
        cur.execute("INSERT INTO edges VALUES " + ", ".join(ROWS))
        cur.execute(TEXT_TYPES)
        cur.execute(TEXT_VALUES)
    conn.commit()
    engine = sa.create_engine(fresh_db)
    try:
        with engine.connect() as c:
            columns = table_columns(c, "public", "edges")
    finally:
        engine.dispose()
    reader = RowsConnection(libpq_dsn(fresh_db, replication=True))
    yield conn, reader, list(columns)
    reader.close()
    conn.close()


def _select(columns: list[PgColumn], where: str = "true") -> str:
    texts = set(text_columns(columns))
    picks = [f"{c.name}::text AS {c.name}" if c.name in texts else c.name for c in columns]
    return f"SELECT {', '.join(picks)} FROM edges WHERE {where} ORDER BY id"


def test_every_type_reads_as_the_streams_text_conversion_reads_it(edges: Any) -> None:
    conn, reader, columns = edges
    sql = _select(columns)
    got = read_rows(reader, sql, columns)
    from_text = text_table(_copy(conn, sql), columns)  # the stream's conversion of the same values
    assert got.schema == from_text.schema
    for name in from_text.column_names:  # column by column, so that a failure names its column
        # by repr: NaN equals NaN, and -0.0 differs from 0.0
        assert _reprs(got.column(name)) == _reprs(from_text.column(name)), name


def _reprs(column: Any) -> list[str]:
    return [repr(v) for v in column.to_pylist()]


def test_types_the_driver_has_no_lake_value_for_are_selected_as_text() -> None:
    def col(t: str) -> PgColumn:
        return PgColumn("x", t, 0)

    for t in (
        "uuid",
        "oid",
        "time without time zone",
        "interval",
        "text[]",
        "numeric",
        "numeric(39,2)",
        "inet",
        "mood",
    ):
        assert text_columns([col(t)]) == ("x",), t
    for t in ("bigint", "real", "boolean", "date", "timestamp(3) with time zone", "bytea",
              "text", "name", "jsonb", "character(5)", "character varying(20)"):  # fmt: skip
        assert text_columns([col(t)]) == (), t


@pytest.mark.parametrize(
    ("key", "plain"),
    [(["i2"], True), (["id"], True), (["o"], True), (["name", "code"], True), (["label"], True),
     (["u"], True), (["nm"], True), (["ts"], False), (["amount", "id"], False)],
)  # fmt: skip
def test_a_plain_keys_last_value_is_the_text_the_server_gives(
    edges: Any, key: list[str], plain: bool
) -> None:
    conn, reader, columns = edges
    by_name = {c.name: c for c in columns}
    assert all(plain_key(by_name[k]) for k in key) == plain
    if not plain:
        return
    for last in (1, 2, 4):
        got = read_rows(reader, _select(columns, f"id <= {last}"), columns)
        last_row = got.slice(got.num_rows - 1).to_pylist()[0]
        values = [last_row[k] for k in key]
        texts = ", ".join(f"{k}::text" for k in key)
        with conn.cursor() as cur:
            cur.execute(f"SELECT {texts} FROM edges WHERE id = {last}")
            server = cur.fetchone()
        # compared the way the next chunk's query compares them: cast back to the column's type
        for k, v, s in zip(key, values, server, strict=True):
            with conn.cursor() as cur:
                cur.execute(f"SELECT %s::{by_name[k].type} = %s::{by_name[k].type}", (str(v), s))
                assert cur.fetchone()[0], (k, v, s)


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("tstz", "'infinity'", "column tstz: an infinite timestamp cannot be stored as a timestamp"),
        ("ts", "'-infinity'", "column ts: an infinite timestamp cannot be stored as a timestamp"),
        ("d", "'infinity'", "column d: an infinite date cannot be stored as a date"),
        ("d", "'-infinity'", "column d: an infinite date cannot be stored as a date"),
        ("amount", "'NaN'", "column amount: numeric NaN or infinity cannot be stored as a decimal"),
    ],
)
def test_a_value_the_lake_type_cannot_hold_is_an_error_naming_its_column(
    edges: Any, column: str, value: str, message: str
) -> None:
    conn, reader, columns = edges
    with conn.cursor() as cur:
        cur.execute(f"UPDATE edges SET {column} = {value} WHERE id = 4")
    conn.commit()
    with pytest.raises(RowsError, match=f"^{message} \\(leave such rows out with the signal's --condition"):
        read_rows(reader, _select(columns), columns)


def test_a_query_the_server_refuses_is_one_line_with_its_sqlstate(edges: Any) -> None:
    _, reader, columns = edges
    with pytest.raises(RowsError, match=r'^relation "gone" does not exist \(SQLSTATE 42P01\)$'):
        read_rows(reader, "SELECT * FROM gone", columns)
    with pytest.raises(RowsError, match=r"^division by zero( \(SQLSTATE 22012\))?$"):  # fails while sending
        read_rows(reader, "SELECT 1 / (4 - id) FROM edges ORDER BY id", columns[:1])
    assert read_rows(reader, "SELECT id FROM edges WHERE false", columns[:1]).num_rows == 0
