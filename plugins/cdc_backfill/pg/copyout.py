"""A ``COPY ... TO STDOUT`` on a psycopg2 connection, received whole in C without the GIL (``_copyout``).

psycopg2's ``copy_expert`` calls a Python ``write`` for every row with the GIL held; for the snapshot's
chunks that was about a third of the reader's CPU, and the lander converting the previous chunk waited
for the GIL meanwhile. The C receive runs libpq's own functions on psycopg2's connection: they are
found in the libpq psycopg2 was linked with (its bundled copy for psycopg2-binary) and handed to C once.
Where the C part is not built, or libpq's functions cannot be found, psycopg2 receives it as before.
"""

from __future__ import annotations

import functools
import io
import logging
from typing import Any

import psycopg2
import psycopg2.errors

try:
    from cdc_backfill.pg import _copyout
except ImportError:  # built where a C compiler is (make venv, pip install): else psycopg2's own COPY
    _copyout = None

log = logging.getLogger(__name__)

# the order _copyout.bind takes them in
LIBPQ_FUNCTIONS = (
    "PQexec", "PQresultStatus", "PQerrorMessage", "PQclear", "PQgetCopyData", "PQfreemem", "PQgetResult",
    "PQcmdTuples", "PQresultErrorField",
)  # fmt: skip


@functools.cache
def received_in_c() -> bool:
    """Whether COPY is received in C here (libpq's functions found, once per process)."""
    if _copyout is None:
        return False
    import ctypes

    from psycopg2 import _psycopg

    try:
        # a library's handle finds the symbols of the libraries it was linked with: psycopg2's libpq
        lib = ctypes.CDLL(_psycopg.__file__)
        _copyout.bind(
            tuple(ctypes.cast(getattr(lib, f), ctypes.c_void_p).value or 0 for f in LIBPQ_FUNCTIONS)
        )
    except (OSError, AttributeError, ValueError) as exc:
        log.info("COPY received by psycopg2: libpq's functions not found (%s)", exc)
        return False
    return True


def error_of(sqlstate: str) -> type[psycopg2.Error]:
    """psycopg2's error class for a SQLSTATE (a connection lost has none)."""
    try:
        return psycopg2.errors.lookup(sqlstate) if sqlstate else psycopg2.OperationalError
    except KeyError:
        return psycopg2.DatabaseError


def copy_out(conn: Any, statement: str) -> tuple[bytes, int]:
    """(the rows ``statement``, a ``COPY ... TO STDOUT``, sent, how many). It runs as a transaction of its
    own: the caller has none open on ``conn`` (else psycopg2 receives it, inside that transaction). A
    failure raises psycopg2's error for its SQLSTATE, as psycopg2 would."""
    if received_in_c() and conn.status == psycopg2.extensions.STATUS_READY and not conn.closed:
        data, rows, state = _copyout.copy_out(conn.pgconn_ptr, statement.encode())
        if data is None:
            raise error_of(state)(rows.removeprefix("ERROR:").strip())
        return data, rows
    buf = io.BytesIO()
    with conn.cursor() as cur:
        cur.copy_expert(statement, buf)
        rows = cur.rowcount
    return buf.getvalue(), rows
