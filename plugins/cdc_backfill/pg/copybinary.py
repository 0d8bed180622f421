"""``COPY ... (FORMAT binary)`` rows to Arrow columns in the lake types (``pgtypes.arrow_type``), the
same table ``csvtext.text_table`` gives for the same rows as CSV.

The server's side of a ``COPY`` is mostly formatting each value as text: the bench's 1M-row table took
0.41 s of its CPU as CSV and 0.26 s in the binary format, and its chunks reached the engine in 0.37 s
against 0.60 s. The binary format is read only where each column's binary form is known here and the C
reader (``_copybinary``) is built: :func:`binary_kinds` says so for a table's columns, else the snapshot
reads CSV as before. Value by value both give the same Arrow values; the tests compare them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pyarrow as pa

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


def binary_kinds(columns: Sequence[PgColumn], text_columns: int = 0) -> tuple[bytes, bytes] | None:
    """(kinds, scales) of the C reader for ``columns`` then ``text_columns`` text columns, or None when
    the rows must be read as CSV (a column without a binary form here, or no C reader built)."""
    if _copybinary is None:
        return None
    kinds = [column_kind(c) for c in columns]
    if None in kinds:
        return None
    scales = [
        (decimal_shape(c) or (0, 0))[1] if k == NUMERIC else 0 for c, k in zip(columns, kinds, strict=True)
    ]
    return bytes(kinds + [BYTES] * text_columns), bytes(scales + [0] * text_columns)  # type: ignore[operator]


def binary_table(
    data: bytes, columns: Sequence[PgColumn], kinds: tuple[bytes, bytes], text_columns: Sequence[str] = ()
) -> pa.Table:
    """``COPY``'s binary rows of the columns (then ``text_columns``, text) as an Arrow table in the lake
    types. A value the lake type cannot hold (an infinite timestamp, a numeric NaN) is a ValueError
    naming its column."""
    assert _copybinary is not None
    names = [c.name for c in columns] + list(text_columns)
    types = [arrow_type(c) for c in columns] + [pa.string()] * len(text_columns)
    try:
        rows, buffers = _copybinary.columns(data, *kinds)
    except ValueError as exc:
        raise ValueError(_named(str(exc), names)) from None
    arrays = []
    for t, (valid, values, offsets) in zip(types, buffers, strict=True):
        parts = [pa.py_buffer(valid), pa.py_buffer(values)]
        if offsets is not None:
            parts.insert(1, pa.py_buffer(offsets))
        arrays.append(pa.Array.from_buffers(t, rows, parts, null_count=-1))
    return pa.Table.from_arrays(arrays, names=names)


def last_fields(data: bytes, count: int) -> list[str | None] | None:
    """The last ``count`` fields of the last row of ``data`` (text columns) as text, None for NULL; None
    when ``data`` holds no row."""
    assert _copybinary is not None
    fields = _copybinary.last_fields(data, count)
    return None if fields is None else [None if f is None else f.decode() for f in fields]


def _named(message: str, names: Sequence[str]) -> str:
    """The C reader's "column 3: ..." with the column's name."""
    m = re.match(r"^column (\d+): (.*)$", message)
    return f"column {names[int(m.group(1))]}: {m.group(2)}" if m else message
