"""``COPY ... (FORMAT binary)`` rows to Arrow columns in the lake types (``pgtypes.arrow_type``), the
same table ``csvtext.text_table`` gives for the same rows as CSV.

The server's side of a ``COPY`` is mostly formatting each value as text: the bench's 1M-row table took
0.41 s of its CPU as CSV and 0.26 s in the binary format, and its chunks reached the engine in 0.37 s
against 0.60 s. The binary format is read only where each column's binary form is known here and the C
reader (``_copybinary``) is built: :func:`binary_rows` says so for a table's columns, else the snapshot
reads CSV as before. Value by value both give the same Arrow values; the tests compare them. Where the
chunk key's binary values give its text plainly (integers, text, uuid), the query appends no text
column of the key for the next chunk's start: the server formats nothing.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from cdc_backfill.arrowbuf import from_buffers
from cdc_backfill.pgtypes import PgColumn, arrow_type, decimal_shape

try:
    from cdc_backfill.pg import _copybinary
except ImportError:  # no compiler where the package was installed: the snapshot reads CSV
    _copybinary = None

# codes of _copybinary.c's kinds
INT2, INT4, INT8, OID, FLOAT4, FLOAT8, BOOL, DATE, TIMESTAMP, NUMERIC, BYTES, JSONB, UUID = range(13)

_FIXED = {
    "smallint": INT2,
    "integer": INT4,
    "bigint": INT8,
    "oid": OID,
    "real": FLOAT4,
    "double precision": FLOAT8,
    "boolean": BOOL,
    "date": DATE,
    "bytea": BYTES,
    # types whose binary form is their text: the bytes COPY would quote in CSV
    "text": BYTES,
    "name": BYTES,
    "json": BYTES,
    "jsonb": JSONB,  # a version byte, then the text
    "uuid": UUID,
}
_TEXT_RE = re.compile(r"^(character varying|character)(\(\d+\))?$")  # bpchar's binary form keeps its padding


def reader_built() -> bool:
    """Whether the C reader was built (a C compiler where the package was installed)."""
    return _copybinary is not None


def column_kind(col: PgColumn) -> int | None:
    """The C reader's code for the column's binary form, or None when it has none here (the table is
    then read as CSV): time, interval, arrays, unconstrained or 39-digit numerics, enums, domains..."""
    if col.type in _FIXED:
        return _FIXED[col.type]
    kind = col.kind
    if kind in ("timestamp", "timestamptz"):
        return TIMESTAMP
    if kind == "numeric" and decimal_shape(col) is not None:
        return NUMERIC
    if _TEXT_RE.match(col.type):
        return BYTES
    return None


def _signed(data: bytes) -> str:
    return str(int.from_bytes(data, "big", signed=True))


def _unsigned(data: bytes) -> str:
    return str(int.from_bytes(data, "big"))


def _uuid_text(data: bytes) -> str:
    return str(uuid.UUID(bytes=data))


def _key_text(col: PgColumn) -> Callable[[bytes], str] | None:
    """How a key column's binary value gives the text the next chunk's query starts after, where that is
    plain (integers, text, uuid); None: the query appends the key's text instead."""
    if col.type in ("smallint", "integer", "bigint"):
        return _signed
    if col.type == "oid":
        return _unsigned
    if col.type == "uuid":
        return _uuid_text
    if col.type.startswith("character varying") or col.type in ("text", "name"):
        return bytes.decode
    if _TEXT_RE.match(col.type):  # character(n): its text cast drops the padding, as the CSV path's does
        return _unpadded
    return None


def _unpadded(data: bytes) -> str:
    return data.decode().rstrip(" ")


@dataclass(frozen=True)
class BinaryRows:
    """How a table's chunks are read from COPY's binary format: the C reader's kinds and scales for each
    field of a row, and how the last row gives the next chunk's start."""

    kinds: bytes
    scales: bytes
    key_index: tuple[int, ...]  # the key columns' places in a row
    key_text: tuple[Callable[[bytes], str], ...] | None  # None: the query appends the key's text

    @property
    def appended(self) -> int:
        """Text columns the query appends after the table's: the key's text, or none."""
        return 0 if self.key_text is not None else len(self.key_index)


def binary_rows(columns: Sequence[PgColumn], key: Sequence[str]) -> BinaryRows | None:
    """How ``columns`` are read in COPY's binary format, chunks ordered by ``key``; None when the rows
    must be read as CSV (a column without a binary form here, or no C reader built)."""
    if _copybinary is None:
        return None
    kinds = [column_kind(c) for c in columns]
    if None in kinds:
        return None
    scales = [
        (decimal_shape(c) or (0, 0))[1] if k == NUMERIC else 0 for c, k in zip(columns, kinds, strict=True)
    ]
    names = [c.name for c in columns]
    index = tuple(names.index(k) for k in key)
    texts = [_key_text(columns[i]) for i in index]
    appended = 0 if None not in texts else len(key)
    return BinaryRows(
        bytes(kinds + [BYTES] * appended),  # type: ignore[operator]
        bytes(scales + [0] * appended),
        index,
        None if appended else tuple(texts),  # type: ignore[arg-type]
    )


def binary_table(
    data: bytes, columns: Sequence[PgColumn], rows: BinaryRows, text_columns: Sequence[str] = ()
) -> pa.Table:
    """``COPY``'s binary rows of the columns (then ``text_columns``, the ``rows.appended`` text columns)
    as an Arrow table in the lake types. A value the lake type cannot hold (an infinite timestamp, a
    numeric NaN) is a ValueError naming its column."""
    assert _copybinary is not None
    names = [c.name for c in columns] + list(text_columns)
    types = [arrow_type(c) for c in columns] + [pa.string()] * len(text_columns)
    try:
        count, buffers = _copybinary.columns(data, rows.kinds, rows.scales)
    except ValueError as exc:
        raise ValueError(_named(str(exc), names)) from None
    arrays = [
        from_buffers(t, count, values, offsets, valid)
        for t, (valid, values, offsets) in zip(types, buffers, strict=True)
    ]
    return pa.Table.from_arrays(arrays, names=names)


def last_key(data: bytes, rows: BinaryRows) -> list[str | None] | None:
    """The last row's key as text (None for NULL), the next chunk's start; None when ``data`` holds no
    row."""
    assert _copybinary is not None
    fields = _copybinary.last_row(data)
    if fields is None:
        return None
    if rows.key_text is None:
        return [None if f is None else f.decode() for f in fields[-rows.appended :]]
    return [
        None if fields[i] is None else text(fields[i])
        for i, text in zip(rows.key_index, rows.key_text, strict=True)
    ]


def _named(message: str, names: Sequence[str]) -> str:
    """The C reader's "column 3: ..." with the column's name, and what to do about a value the lake type
    cannot hold: a condition the signal's check takes, which keeps the column's NULLs."""
    m = re.match(r"^column (\d+): (.*)$", message)
    if not m:
        return message
    name, what = names[int(m.group(1))], m.group(2)
    if "infinite" in what or "NaN" in what:
        top = "infinity" if "infinite" in what else "Infinity"
        finite = f"{name} IS NULL OR ({name} > '-{top}' AND {name} < '{top}')"
        return f'column {name}: {what} (leave such rows out with the signal\'s --condition "{finite}")'
    return f"column {name}: {what}"
