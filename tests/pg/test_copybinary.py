"""COPY's binary format read into lake types gives the table the CSV path gives for the same rows, on a
real server: every type the binary reader takes, with the values at their edges."""

from __future__ import annotations

import io
from typing import Any

import psycopg2
import pytest
import sqlalchemy as sa

from cdc_backfill.pg.catalog import table_columns
from cdc_backfill.pg.connect import SESSION_OPTIONS, libpq_dsn
from cdc_backfill.pg.copybinary import (
    BYTES,
    DATE,
    INT8,
    binary_rows,
    binary_table,
    column_kind,
    last_key,
)
from cdc_backfill.pg.csvtext import last_fields, text_table
from cdc_backfill.pgtypes import PgColumn
from tests.support.pg import require_copy_reader

pytestmark = pytest.mark.pg


@pytest.fixture(autouse=True)
def _built() -> None:
    require_copy_reader()


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


def _copy(conn: Any, sql: str, fmt: str) -> bytes:
    buf = io.BytesIO()
    with conn.cursor() as cur:
        cur.copy_expert(f"COPY ({sql}) TO STDOUT WITH (FORMAT {fmt})", buf)
    return buf.getvalue()


@pytest.fixture
def edges(fresh_db: str) -> tuple[Any, list[PgColumn]]:
    conn = psycopg2.connect(libpq_dsn(fresh_db), options=SESSION_OPTIONS)
    with conn.cursor() as cur:
        cur.execute(TABLE)
        cur.execute("INSERT INTO edges VALUES " + ", ".join(ROWS))
    conn.commit()
    engine = sa.create_engine(fresh_db)
    try:
        with engine.connect() as c:
            columns = table_columns(c, "public", "edges")
    finally:
        engine.dispose()
    yield conn, list(columns)
    conn.close()


@pytest.mark.parametrize("key", [["id"], ["amount", "id"]])
def test_every_type_the_binary_reader_takes_reads_as_the_csv_path_reads_it(
    edges: Any, key: list[str]
) -> None:
    conn, columns = edges
    rows = binary_rows(columns, key)
    assert rows is not None, "every column here has a binary form"
    # a bigint key's binary values give its text: nothing appended; a numeric one's do not
    texts = [f"{k}::text AS _k{i}" for i, k in enumerate(key)] if rows.appended else []
    names = [f"_k{i}" for i in range(rows.appended)]
    sql = f"SELECT {', '.join(['*', *texts])} FROM edges ORDER BY id"
    from_binary = binary_table(_copy(conn, sql, "binary"), columns, rows, names)
    from_csv = text_table(_copy(conn, sql, "csv"), columns, names)
    assert from_binary.schema == from_csv.schema
    for name in from_csv.column_names:  # column by column, so that a failure names its column
        # by repr: NaN equals NaN, and -0.0 differs from 0.0
        assert _reprs(from_binary.column(name)) == _reprs(from_csv.column(name)), name


def _reprs(column: Any) -> list[str]:
    return [repr(v) for v in column.to_pylist()]


@pytest.mark.parametrize(
    "key", [["i2"], ["i4"], ["id"], ["o"], ["name", "code"], ["label"], ["u"], ["nm"], ["ts"]]
)
def test_the_last_rows_key_text_is_what_the_csv_path_reads(edges: Any, key: list[str]) -> None:
    conn, columns = edges
    rows = binary_rows(columns, key)
    assert rows is not None
    assert (rows.appended == 0) == (key != ["ts"]), "integers, text and uuid give their text; a timestamp not"
    texts = ", ".join(f"{k}::text AS _k{i}" for i, k in enumerate(key))
    for last in (1, 2, 3, 4):  # 3 holds NULLs
        sql = f"SELECT * FROM edges WHERE id <= {last} ORDER BY id"
        appended = f"SELECT *, {texts} FROM edges WHERE id <= {last} ORDER BY id"
        binary = _copy(conn, appended if rows.appended else sql, "binary")
        assert last_key(binary, rows) == last_fields(_copy(conn, appended, "csv"), len(key)), last
    assert last_key(_copy(conn, "SELECT * FROM edges WHERE false", "binary"), rows) is None


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("tstz", "'infinity'", "column tstz: an infinite timestamp cannot be stored as a timestamp"),
        ("ts", "'-infinity'", "column ts: an infinite timestamp cannot be stored as a timestamp"),
        ("d", "'infinity'", "column d: an infinite date cannot be stored as a date"),
        ("amount", "'NaN'", "column amount: numeric NaN or infinity cannot be stored as a decimal"),
    ],
)
def test_a_value_the_lake_type_cannot_hold_is_an_error_naming_its_column(
    edges: Any, column: str, value: str, message: str
) -> None:
    conn, columns = edges
    with conn.cursor() as cur:
        cur.execute(f"UPDATE edges SET {column} = {value} WHERE id = 4")
    conn.commit()
    rows = binary_rows(columns, ["id"])
    assert rows is not None
    with pytest.raises(ValueError, match=f"^{message} \\(leave such rows out with the signal's --condition"):
        binary_table(_copy(conn, "SELECT * FROM edges ORDER BY id", "binary"), columns, rows)


def test_types_without_a_binary_form_here_leave_the_table_to_csv() -> None:
    kept = [PgColumn("id", "bigint", 20)]
    for other in ("time without time zone", "interval", "text[]", "numeric", "numeric(39,2)", "inet", "mood"):
        assert column_kind(PgColumn("x", other, 0)) is None, other
        assert binary_rows([*kept, PgColumn("x", other, 0)], ["id"]) is None, other
    rows = binary_rows(kept, ["id"])
    assert rows is not None and (rows.kinds, rows.key_index, rows.appended) == (bytes([INT8]), (0,), 0)
    rows = binary_rows([*kept, PgColumn("at", "date", 1082)], ["at", "id"])
    assert rows is not None and (rows.kinds, rows.appended) == (bytes([INT8, DATE, BYTES, BYTES]), 2)


def test_malformed_data_is_a_value_error_not_a_crash() -> None:
    rows = binary_rows([PgColumn("id", "bigint", 20)], ["id"])
    assert rows is not None
    header = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
    for data in (b"", b"id\n1\n", header, header + b"\x00\x01\x00\x00\x00\x08\x00", header + b"\x00\x02"):
        with pytest.raises(ValueError, match="COPY"):
            binary_table(data, [PgColumn("id", "bigint", 20)], rows)
