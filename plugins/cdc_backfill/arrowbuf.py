"""Arrow columns built from buffers: no Python object per value on the way, and no ``pa.array(list)``,
whose first call imports pandas (0.6 s at the start of every capture). The C reader ``ingest._plainjson``
hands its columns over as such buffers; the capture's rolls and the snapshot's chunks build their
constant columns here.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import accumulate

import pyarrow as pa

Buffer = bytes | bytearray | array  # what a column's buffer may be handed over as


def joined(parts: list[bytes]) -> tuple[bytes, bytes]:
    """The parts concatenated, and their int32 offsets (n + 1): a variable-width Arrow column's buffers."""
    return b"".join(parts), array("i", accumulate((len(p) for p in parts), initial=0)).tobytes()


def from_buffers(
    kind: pa.DataType,
    n: int,
    data: Buffer,
    offsets: Buffer | None = None,
    validity: Buffer | None = None,
) -> pa.Array:
    """n values of ``kind`` from a C reader's buffers: ``data``, a variable-width column's int32
    ``offsets`` (n + 1), an Arrow ``validity`` bitmap (None: no value is null)."""
    buffers = [None if validity is None else pa.py_buffer(validity)]
    buffers += [pa.py_buffer(data)] if offsets is None else [pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.Array.from_buffers(kind, n, buffers)


def char_array(chars: bytes) -> pa.Array:
    """One-character strings (the ops ``c``, ``u``, ``d``...) from their bytes."""
    return from_buffers(pa.string(), len(chars), chars, array("i", range(len(chars) + 1)))


_STRIDES: dict[int, pa.Buffer] = {}  # by a value's length: the offsets 0, len, 2 len ... built so far


def _stride_offsets(width: int, n: int) -> pa.Buffer:
    """int32 offsets 0, width, 2 width ... of n values: a slice of one buffer kept for each width, not
    built again for every chunk's constant columns (docs/benchmarks.md, "Measured choices")."""
    built = _STRIDES.get(width)
    if built is None or built.size < 4 * (n + 1):
        count = max(n + 1, 2 * (built.size // 4 if built is not None else 0))
        built = pa.py_buffer(array("i", range(0, width * count, width)) if width else bytes(4 * count))
        _STRIDES[width] = built
    return built.slice(0, 4 * (n + 1))


def repeated_string(value: str, n: int) -> pa.Array:
    """``value`` n times (the origin of every event of a roll, a snapshot chunk's constant columns)."""
    data = value.encode()
    return pa.Array.from_buffers(
        pa.string(), n, [None, _stride_offsets(len(data), n), pa.py_buffer(data * n)]
    )


def int64_array(values: Sequence[int | None]) -> pa.Array:
    """int64 values, None as null."""
    n = len(values)
    if None not in values:
        return from_buffers(pa.int64(), n, array("q", values))
    valid = bytearray((n + 7) // 8)
    for i, v in enumerate(values):
        if v is not None:
            valid[i >> 3] |= 1 << (i & 7)
    data = array("q", (0 if v is None else v for v in values))
    return from_buffers(pa.int64(), n, data, validity=valid)


def line_array(n: int) -> pa.Array:
    """1 … n as int64: each event's order in its file."""
    return from_buffers(pa.int64(), n, array("q", range(1, n + 1)))


def string_array(values: Sequence[str]) -> pa.Array:
    """Strings, none null."""
    data, offsets = joined([v.encode() for v in values])
    return from_buffers(pa.string(), len(values), data, offsets)


def names_array(lists: list[list[str] | None]) -> pa.Array:
    """Lists of column names (the unchanged columns), None as null."""
    n = len(lists)
    if all(v is None for v in lists):
        return pa.nulls(n, pa.list_(pa.string()))
    valid = bytearray((n + 7) // 8)
    offsets = array("i", [0])
    names: list[str] = []
    for i, v in enumerate(lists):
        if v is not None:
            valid[i >> 3] |= 1 << (i & 7)
            names.extend(v)
        offsets.append(len(names))
    return pa.Array.from_buffers(
        pa.list_(pa.string()), n, [pa.py_buffer(valid), pa.py_buffer(offsets)], children=[string_array(names)]
    )
