"""A query's rows as an Arrow table in the lake types (``pgtypes.arrow_type``), read by ADBC's PostgreSQL
driver: it runs the query as ``COPY ... TO STDOUT (FORMAT binary)`` and decodes the rows into Arrow in
C++, without the GIL, so the server formats no value as text and the lander converts the previous chunk
meanwhile.

The driver gives most types their lake type already; a few need one step here:

- a type whose binary form the driver does not decode into the lake's value (uuid, oid, time, interval,
  arrays, enums, network types...) is selected as the server's text (:func:`text_columns`): the lake
  stores the text, as it does for the same column in the stream;
- numerics are selected as text too, and ``numeric(p,s)`` cast to its decimal here: the driver decodes
  the binary form slower than the server prints it (the snapshot bench's table read at 0.7 of a CSV
  ``COPY`` with its one numeric column decoded by the driver);
- ``json``/``jsonb`` arrive as Arrow's JSON type, whose storage is the lake's text;
- PostgreSQL's infinite timestamps and dates arrive as values beyond the server's own range, and a
  numeric ``NaN`` as text a decimal cannot hold: each is an error naming its column.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import adbc_driver_manager
import adbc_driver_postgresql
import pyarrow as pa
import pyarrow.compute as pc

from cdc_backfill.pgtypes import PgColumn, arrow_type

# types whose binary form the driver decodes into the lake's value (with a cast at most)
_DECODED_KINDS = ("int", "float", "bool", "date", "timestamp", "timestamptz", "bytea")
_TEXT_TYPES = re.compile(r"^(text|name|json|jsonb|character varying(\(\d+\))?|character(\(\d+\))?)$")
# the server's least timestamp and date (4713 BC): its infinities wrap to values below them on the
# driver's way from PostgreSQL's epoch (2000) to Arrow's (1970)
_LEAST_MICROS = -210_866_803_200_000_000
_LEAST_DAYS = -2_440_588


class RowsError(RuntimeError):
    """A query the server refused, or a value the lake type cannot hold; the message is one line."""


def text_columns(columns: Sequence[PgColumn]) -> tuple[str, ...]:
    """The columns a query selects as the server's text: the driver has no lake value for their binary
    form (oid is unsigned; uuid, time and the rest are stored as their text)."""
    return tuple(c.name for c in columns if not _decoded(c))


def _decoded(col: PgColumn) -> bool:
    if col.type == "oid":
        return False
    if col.kind in _DECODED_KINDS:
        return True
    return bool(_TEXT_TYPES.match(col.type))


def plain_key(col: PgColumn) -> bool:
    """Whether the column's lake value, printed, is the text the next chunk's query starts after
    (integers, and whatever the lake stores as text); else the query appends the key's text."""
    t = arrow_type(col)
    return pa.types.is_integer(t) or pa.types.is_string(t)


class RowsConnection:
    """An ADBC connection, each query a transaction of its own (ADBC's autocommit). The driver manager's
    own API: its DB-API module imports pandas and polars, 0.4 s at the start of every snapshot."""

    def __init__(self, dsn: str) -> None:
        self.database = adbc_driver_postgresql.connect(dsn)
        try:
            self.connection = adbc_driver_manager.AdbcConnection(self.database)
        except adbc_driver_manager.Error as exc:
            self.database.close()
            raise RowsError(server_message(exc)) from None

    def query(self, sql: str) -> pa.Table:
        statement = adbc_driver_manager.AdbcStatement(self.connection)
        try:
            statement.set_sql_query(sql)
            stream, _ = statement.execute_query()
            return pa.RecordBatchReader.from_stream(stream).read_all()
        finally:
            statement.close()

    def close(self) -> None:
        self.connection.close()
        self.database.close()


def read_rows(
    conn: RowsConnection, query: str, columns: Sequence[PgColumn], extra: Sequence[str] = ()
) -> pa.Table:
    """The rows of ``query`` (parameters inlined), whose columns are ``columns`` then ``extra`` (kept as
    text), as an Arrow table in the lake types."""
    try:
        got = conn.query(query)
    except (adbc_driver_manager.Error, pa.ArrowException, OSError) as exc:  # OSError: while streaming
        raise RowsError(server_message(exc)) from None
    names = [c.name for c in columns] + list(extra)
    arrays = [lake_array(got.column(i), c) for i, c in enumerate(columns)]
    arrays += [_plain(got.column(len(columns) + i)) for i in range(len(extra))]
    return pa.Table.from_arrays(arrays, names=names)


def lake_array(values: pa.ChunkedArray, col: PgColumn) -> pa.ChunkedArray:
    """One column as the driver gave it, in the column's lake type; a value it cannot hold is a
    RowsError naming the column."""
    values = _plain(values)
    kind = arrow_type(col)
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        least = _LEAST_MICROS if pa.types.is_timestamp(kind) else _LEAST_DAYS
        low = pc.min(values.cast(pa.int64() if pa.types.is_timestamp(kind) else pa.int32())).as_py()
        if low is not None and low < least:
            what = "timestamp" if pa.types.is_timestamp(kind) else "date"
            raise RowsError(_unstorable(col.name, f"an infinite {what} cannot be stored as a {what}", what))
    if values.type == kind:
        return values
    try:
        return values.cast(kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        if pa.types.is_decimal(kind):
            message = "numeric NaN or infinity cannot be stored as a decimal"
            raise RowsError(_unstorable(col.name, message, "numeric")) from None
        raise RowsError(f"column {col.name}: its values cannot be stored as {kind}") from None


def _plain(values: pa.ChunkedArray) -> pa.ChunkedArray:
    """An extension column (the driver's JSON, or its opaque text of a numeric) as its storage."""
    if isinstance(values.type, pa.BaseExtensionType):
        return pa.chunked_array([c.storage for c in values.chunks], values.type.storage_type)
    return values


def _unstorable(name: str, what: str, kind: str) -> str:
    """The message for a value the lake type cannot hold, and what to do about it: a condition the
    signal's check takes, which keeps the column's NULLs."""
    top = "Infinity" if kind == "numeric" else "infinity"
    finite = f"{name} IS NULL OR ({name} > '-{top}' AND {name} < '{top}')"
    return f'column {name}: {what} (leave such rows out with the signal\'s --condition "{finite}")'


def server_message(exc: Exception) -> str:
    """The server's own words from a driver error ("ERROR:  division by zero" of the COPY it ran), one
    line; else the driver's first line."""
    text = str(exc)
    m = re.search(r"ERROR:\s+(.*)", text)
    first = (m.group(1) if m else text).splitlines()[0].strip()
    sqlstate = getattr(exc, "sqlstate", None)
    return f"{first} (SQLSTATE {sqlstate})" if sqlstate else first
