"""The log's ``_cdc_position`` column of a roll, built from buffers (:mod:`cdc_backfill.arrowbuf`).

``position_keys`` is the C version (``pg._speedups``) when it is built, else :func:`position_keys_py`,
the reference both are tested against.
"""

from __future__ import annotations

import pyarrow as pa

from cdc_backfill.arrowbuf import from_buffers, joined
from cdc_backfill.events.positions import position_key

try:
    from cdc_backfill.pg._speedups import position_keys as _position_keys_c
except ImportError:  # no compiler where the package was installed: the Python path, same bytes
    _position_keys_c = None


def position_keys_py(positions: list[tuple[int, ...]]) -> tuple[bytes, bytes]:
    """``position_key`` of each position, concatenated, and the keys' int32 offsets (n + 1)."""
    return joined([position_key(p) for p in positions])


def position_key_array(positions: list[tuple[int, ...]]) -> pa.Array:
    """The positions as the log's ``_cdc_position`` column."""
    built = _position_keys_c(positions) if _position_keys_c is not None else None
    data, offsets = built if built is not None else position_keys_py(positions)  # None: beyond 64 bits
    return from_buffers(pa.binary(), len(positions), data, offsets)
