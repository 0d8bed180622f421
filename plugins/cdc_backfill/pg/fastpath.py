"""One pgoutput TupleData to the JSON of its row and key: C when built, else the same in Python.

``encode_tuple(buf, pos, kinds, callbacks, names, key_idx) -> (row_json, key_json, new_pos)``. The C
version (``_speedups.c``, built by ``pip install``) is about five times faster on the capture's hot
path; the Python version is the reference both are tested against.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from cdc_backfill.pg.pgoutput import UNAVAILABLE_JSON, ProtocolError
from cdc_backfill.pg.values import (
    BOOL,
    FLOAT4,
    FLOAT8,
    INT2,
    INT4,
    INT8,
    NUMERIC,
    OID,
    TIMESTAMPTZ,
    _json_bool,
    _json_float,
    _json_quoted,
    _json_text,
    _json_timestamptz,
    converter_for,
    json_via,
)

KIND_RAW, KIND_TEXT, KIND_QUOTED, KIND_BOOL, KIND_FLOAT, KIND_TSTZ, KIND_CALLBACK = range(7)
Encoder = Callable[[bytes], bytes]


def column_kind(type_oid: int, element_of: Callable[[int], int | None] | None = None) -> tuple[int, Encoder]:
    """(kind code, Python encoder) for a column type. The encoder is what the Python path calls, and
    what the C path calls back for the kinds it does not do itself."""
    if type_oid in (INT2, INT4, INT8, OID):
        return KIND_RAW, bytes
    if type_oid in (FLOAT4, FLOAT8):
        return KIND_FLOAT, _json_float
    if type_oid == BOOL:
        return KIND_BOOL, _json_bool
    if type_oid == NUMERIC:
        return KIND_QUOTED, _json_quoted
    if type_oid == TIMESTAMPTZ:
        return KIND_TSTZ, _json_timestamptz
    conv = converter_for(type_oid, element_of)
    if conv is None:
        return KIND_TEXT, _json_text
    return KIND_CALLBACK, json_via(conv)


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def encode_tuple_py(
    buf: bytes,
    pos: int,
    kinds: bytes,
    callbacks: Sequence[Encoder],
    names: Sequence[bytes],
    key_idx: Sequence[int],
) -> tuple[bytes, bytes, int]:
    (ncols,) = _I16.unpack_from(buf, pos)
    pos += 2
    values: list[bytes] = []
    for i in range(ncols):
        kind = buf[pos]
        if kind == 0x74:
            (length,) = _I32.unpack_from(buf, pos + 1)
            end = pos + 5 + length
            values.append(callbacks[i](buf[pos + 5 : end]))
            pos = end
        elif kind == 0x6E:
            values.append(b"null")
            pos += 1
        elif kind == 0x75:
            values.append(UNAVAILABLE_JSON)
            pos += 1
        else:
            raise ProtocolError(f"unexpected tuple data kind {kind!r}")
    row = b"{" + b",".join([n + v for n, v in zip(names, values, strict=False)]) + b"}"
    key = b"{" + b",".join([names[i] + values[i] for i in key_idx]) + b"}"
    return row, key, pos


try:
    from cdc_backfill.pg._speedups import encode_tuple as _encode_tuple_c

    ACCELERATED = True
except ImportError:  # no compiler where the package was installed: the Python path, same results
    _encode_tuple_c = None
    ACCELERATED = False

encode_tuple = _encode_tuple_c or encode_tuple_py
