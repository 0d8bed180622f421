"""One pgoutput TupleData to a CSV line of its text values (``pg.csvtext`` reads it into lake types):
what the capture will land into the typed event log. The columns the server did not send (an
unchanged TOAST value, kind ``u``) come back by index: their field is empty and their value stays.

``tuple_csv`` is the C version (``_speedups.c``) when it is built, else :func:`tuple_csv_py`, the
reference both are tested against; an unknown kind or a truncated tuple is a ``ValueError`` in both
(``ProtocolError`` is one)."""

from __future__ import annotations

import struct

from cdc_backfill.pg.pgoutput import ProtocolError

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def tuple_csv_py(
    buf: bytes, pos: int, key_idx: tuple[int, ...] = ()
) -> tuple[bytes, list[int], tuple[bytes, ...], int]:
    """(CSV line, indexes of unchanged columns, the fields at ``key_idx``, position after the tuple) of
    the TupleData at ``pos``. Fields compare as bytes: two tuples with equal key fields have equal keys."""
    (ncols,) = _I16.unpack_from(buf, pos)
    pos += 2
    fields: list[bytes] = []
    unchanged: list[int] = []
    for i in range(ncols):
        kind = buf[pos]
        if kind == 0x74:  # t: text
            (length,) = _I32.unpack_from(buf, pos + 1)
            end = pos + 5 + length
            value = buf[pos + 5 : end]
            fields.append(b'"' + (value.replace(b'"', b'""') if b'"' in value else value) + b'"')
            pos = end
        elif kind == 0x6E:  # n: NULL
            fields.append(b"")
            pos += 1
        elif kind == 0x75:  # u: unchanged TOAST value, not sent
            fields.append(b"")
            unchanged.append(i)
            pos += 1
        else:
            raise ProtocolError(f"unexpected tuple data kind {kind!r}")
    return b",".join(fields) + b"\n", unchanged, tuple(fields[i] for i in key_idx), pos


try:
    from cdc_backfill.pg._speedups import tuple_csv as _tuple_csv_c
except ImportError:  # no compiler where the package was installed: the Python path, same results
    _tuple_csv_c = None

tuple_csv = _tuple_csv_c or tuple_csv_py
