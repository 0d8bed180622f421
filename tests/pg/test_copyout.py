"""``pg.copyout``: a COPY received whole in C on psycopg2's connection gives what psycopg2 receives,
fails as psycopg2 fails, and leaves the connection as psycopg2 would."""

from __future__ import annotations

import io
from typing import Any

import psycopg2
import psycopg2.errors
import pytest

from cdc_backfill.pg.connect import libpq_dsn
from cdc_backfill.pg.copyout import copy_out, received_in_c
from tests.support.pg import sql

pytestmark = pytest.mark.pg


@pytest.fixture
def conn(fresh_db: str) -> Any:
    if not received_in_c():
        from tests.conftest import unavailable

        unavailable("the C receive of COPY", "not built: make venv builds it where a C compiler is")
    sql(
        fresh_db,
        "CREATE TABLE t (id int PRIMARY KEY, v text, b bytea)",
        "INSERT INTO t SELECT i, repeat('x', i % 300), decode(md5(i::text), 'hex') FROM generate_series(1, 20000) i",
    )
    c = psycopg2.connect(libpq_dsn(fresh_db))
    yield c
    c.close()


def _by_psycopg2(conn: Any, statement: str) -> tuple[bytes, int]:
    buf = io.BytesIO()
    with conn.cursor() as cur:
        cur.copy_expert(statement, buf)
        rows = cur.rowcount
    conn.commit()
    return buf.getvalue(), rows


@pytest.mark.parametrize("fmt", ["binary", "csv"])
def test_the_same_rows_as_psycopg2_receives_and_the_connection_stays_usable(conn: Any, fmt: str) -> None:
    statement = f"COPY (SELECT * FROM t ORDER BY id) TO STDOUT WITH (FORMAT {fmt})"
    got = copy_out(conn, statement)
    assert got[1] == 20000 and got == _by_psycopg2(conn, statement)
    assert copy_out(conn, "COPY (SELECT * FROM t WHERE false) TO STDOUT") == (b"", 0)
    assert conn.status == psycopg2.extensions.STATUS_READY
    # libpq's own view, as the server reported it: no transaction left open
    assert conn.info.transaction_status == psycopg2.extensions.TRANSACTION_STATUS_IDLE
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM t")
        assert cur.fetchone() == (20000,)
    conn.rollback()


def test_a_failure_raises_psycopg2s_error_and_the_connection_goes_on(conn: Any) -> None:
    with pytest.raises(psycopg2.errors.UndefinedTable, match=r'^relation "gone" does not exist'):
        copy_out(conn, "COPY (SELECT * FROM gone) TO STDOUT")
    with pytest.raises(psycopg2.errors.DivisionByZero, match="division by zero"):  # fails while sending
        copy_out(conn, "COPY (SELECT 1 / (20000 - id) FROM t ORDER BY id) TO STDOUT")
    assert copy_out(conn, "COPY (SELECT 1) TO STDOUT") == (b"1\n", 1)
    assert conn.info.transaction_status == psycopg2.extensions.TRANSACTION_STATUS_IDLE


def test_inside_an_open_transaction_psycopg2_receives_it_there(conn: Any) -> None:
    with conn.cursor() as cur:
        cur.execute("DELETE FROM t WHERE id > 10")
    assert copy_out(conn, "COPY (SELECT count(*) FROM t) TO STDOUT") == (b"10\n", 1)
    conn.rollback()
    assert copy_out(conn, "COPY (SELECT count(*) FROM t) TO STDOUT") == (b"20000\n", 1)
