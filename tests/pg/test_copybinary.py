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
from cdc_backfill.pg.copybinary import binary_kinds, binary_table, column_kind, reader_built
from cdc_backfill.pg.copybinary import last_fields as binary_last_fields
from cdc_backfill.pg.csvtext import last_fields, text_table
from cdc_backfill.pgtypes import PgColumn
from tests.conftest import unavailable

pytestmark = pytest.mark.pg


@pytest.fixture(autouse=True)
def _built() -> None:
    if not reader_built():
        unavailable(
            "the C reader of COPY's binary format", "not built: make venv builds it where a C compiler is"
        )


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


def test_every_type_the_binary_reader_takes_reads_as_the_csv_path_reads_it(edges: Any) -> None:
    conn, columns = edges
    kinds = binary_kinds(columns, 1)
    assert kinds is not None, "every column here has a binary form"
    sql = "SELECT *, id::text AS _k0 FROM edges ORDER BY id"
    from_binary = binary_table(_copy(conn, sql, "binary"), columns, kinds, ["_k0"])
    from_csv = text_table(_copy(conn, sql, "csv"), columns, ["_k0"])
    assert from_binary.schema == from_csv.schema
    for name in from_csv.column_names:  # column by column, so that a failure names its column
        # by repr: NaN equals NaN, and -0.0 differs from 0.0
        assert _reprs(from_binary.column(name)) == _reprs(from_csv.column(name)), name


def _reprs(column: Any) -> list[str]:
    return [repr(v) for v in column.to_pylist()]


def test_the_last_rows_key_is_read_as_the_csv_path_reads_it(edges: Any) -> None:
    conn, _ = edges
    sql = "SELECT id, name::text AS _k0, label::text AS _k1 FROM edges WHERE id <= {} ORDER BY id"
    for last in (1, 2, 3):
        binary = _copy(conn, sql.format(last), "binary")
        assert binary_last_fields(binary, 2) == last_fields(_copy(conn, sql.format(last), "csv"), 2)
    assert binary_last_fields(_copy(conn, sql.format(0), "binary"), 2) is None


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
    kinds = binary_kinds(columns)
    assert kinds is not None
    with pytest.raises(ValueError, match=f"^{message}$"):
        binary_table(_copy(conn, "SELECT * FROM edges ORDER BY id", "binary"), columns, kinds)


def test_types_without_a_binary_form_here_leave_the_table_to_csv() -> None:
    kept = [PgColumn("id", "bigint", 20)]
    for other in ("time without time zone", "interval", "text[]", "numeric", "numeric(39,2)", "inet", "mood"):
        assert column_kind(PgColumn("x", other, 0)) is None, other
        assert binary_kinds([*kept, PgColumn("x", other, 0)]) is None, other
    assert binary_kinds(kept, 2) == (bytes([2, 10, 10]), bytes(3))


def test_malformed_data_is_a_value_error_not_a_crash() -> None:
    kinds = binary_kinds([PgColumn("id", "bigint", 20)])
    assert kinds is not None
    header = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
    for data in (b"", b"id\n1\n", header, header + b"\x00\x01\x00\x00\x00\x08\x00", header + b"\x00\x02"):
        with pytest.raises(ValueError, match="COPY"):
            binary_table(data, [PgColumn("id", "bigint", 20)], kinds)
