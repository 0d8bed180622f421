"""How many rows the next chunk asks for when the signal named no chunk size (pure).

A chunk costs two watermark commits, a query and a file whatever its size, so small chunks spend the
snapshot's time on those: 4,096-row chunks read the bench's 1M-row table about a fifth slower than
65,536-row ones. A reader therefore starts at the default size and doubles it after each chunk whose
window closed quickly, up to a row and a byte bound that keep its memory bounded (at most two chunks
of a reader are in memory: one landing, one being read); a window held open long (a busy source, a
slow network) halves it again, down to the default. A chunk size the signal names is used as given.
"""

from __future__ import annotations

from cdc_backfill.signals.validate import DEFAULT_CHUNK_SIZE

ADAPTIVE_MAX_ROWS = 65_536
ADAPTIVE_MAX_BYTES = 32 << 20  # of a chunk's rows as the source sent them
GROW_UNDER_SECONDS = 0.5  # a window open for less than this lets the next chunk double
SHRINK_OVER_SECONDS = 2.0  # one open for longer than this halves the next
# what an empty chunk size means, in the words the CLI's help and the Airflow form show
ADAPTIVE_SIZES = (
    f"the engine starts at {DEFAULT_CHUNK_SIZE:,} and doubles while chunks read fast, up to "
    f"{ADAPTIVE_MAX_ROWS:,} rows or {ADAPTIVE_MAX_BYTES >> 20} MiB"
)


def next_chunk_size(size: int, base: int, rows: int, nbytes: int, window_seconds: float) -> int:
    """The next chunk's size after one of ``size`` rows that read ``rows`` rows (``nbytes`` bytes) in a
    window open for ``window_seconds``; never below ``base``, the size the reader started at."""
    if window_seconds > SHRINK_OVER_SECONDS:
        return max(base, size // 2)
    grown = size * 2
    if rows < size or window_seconds >= GROW_UNDER_SECONDS or grown > ADAPTIVE_MAX_ROWS:
        return size
    if nbytes * 2 > ADAPTIVE_MAX_BYTES:
        return size
    return grown
