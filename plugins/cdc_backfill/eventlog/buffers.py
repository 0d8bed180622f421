"""The log's ``_cdc_position`` column of a roll, built from buffers (:mod:`cdc_backfill.arrowbuf`).

``position_keys`` (C, ``pg._speedups``) builds them for positions whose elements fit 64 bits; wider ones
take :func:`position_keys_py`.
"""

from __future__ import annotations

import pyarrow as pa

from cdc_backfill.arrowbuf import from_buffers, joined
from cdc_backfill.events.positions import position_key
from cdc_backfill.pg._speedups import position_keys


def position_keys_py(positions: list[tuple[int, ...]]) -> tuple[bytes, bytes]:
    """``position_key`` of each position, concatenated, and the keys' int32 offsets (n + 1)."""
    return joined([position_key(p) for p in positions])


def position_key_array(positions: list[tuple[int, ...]]) -> pa.Array:
    """The positions as the log's ``_cdc_position`` column."""
    built = position_keys(positions)
    data, offsets = built if built is not None else position_keys_py(positions)  # None: beyond 64 bits
    return from_buffers(pa.binary(), len(positions), data, offsets)
