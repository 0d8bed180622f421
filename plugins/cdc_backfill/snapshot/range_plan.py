"""Planning a collection: fix its largest key and cut the key space into ranges, reading keys only, so
several readers can each take ranges (docs/design.md §4)."""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cdc_backfill.names import quoted_table
from cdc_backfill.snapshot.progress import NULL_RANGE
from cdc_backfill.snapshot.sql import (
    TABLE_PAGES,
    ChunkTable,
    boundary_select,
    compile_sql,
    count_select,
    key_params,
    max_key_select,
    sample_keys_select,
)

log = logging.getLogger(__name__)

RANGES_PER_READER = 4
# pages sampled a range to cut a PostgreSQL table's ranges. A page holds neighbouring keys when rows
# were inserted in key order, so what evens ranges is the number of pages, not of keys: with 128 a
# range, a 10M-row table's 8 ranges came out within a fifth of even, from about 1,000 pages (0.1 s
# against 1.1-1.4 s stepping through every key).
SAMPLE_PAGES_PER_RANGE = 128
MIN_SAMPLE_PER_RANGE = 20  # fewer sampled keys than this a range: cut by stepping through the keys

Range = tuple[int, list[str] | None, list[str] | None]  # (range number, start after, up to)


@dataclass(frozen=True)
class RangePlan:
    ranges: list[Range]
    estimate: int  # rows, from a count when the collection started
    empty: bool  # no rows at all: nothing to read
    selected: int | None = None  # of them, the rows the snapshot's condition selects (None: all)

    @property
    def to_read(self) -> int:
        """The rows the snapshot expects to read: its progress's 100%."""
        return self.estimate if self.selected is None else self.selected


def range_count(readers: int, estimate: int, chunk_size: int) -> int:
    """How many ranges to cut: one per reader would leave readers idle at the end, so a few each (pure)."""
    if readers <= 1:
        return 1
    return max(1, min(readers * RANGES_PER_READER, estimate // max(1, chunk_size)))


def plan_ranges(
    conn: sa.Connection,
    ct: ChunkTable,
    dialect: str,
    readers: int,
    chunk_size: int,
    condition: str | None = None,
) -> RangePlan:
    """Ranges cut over the whole table's keys (a condition's rows may sit anywhere in it); the rows
    ``condition`` selects counted apart, for the progress."""
    hi_row = conn.execute(sa.text(compile_sql(max_key_select(ct, dialect), dialect))).first()
    estimate = int(conn.execute(sa.text(compile_sql(count_select(ct), dialect))).scalar_one())
    ranges: list[Range] = []
    if hi_row is not None:
        hi = [str(v) for v in hi_row]
        n = range_count(readers, estimate, chunk_size)
        bounds: list[list[str] | None] = [None]
        if n > 1:
            bounds += sampled_bounds(conn, ct, dialect, n, hi) or stepped_bounds(
                conn, ct, dialect, n, estimate, hi
            )
        for i, lo in enumerate(bounds):
            ranges.append((i, lo, bounds[i + 1] if i + 1 < len(bounds) else hi))
    if ct.nullable_key:
        ranges.append((NULL_RANGE, None, None))
    if not ranges:  # an empty table: nothing to read, done at once
        ranges.append((0, None, None))
    selected = None
    if condition and hi_row is not None:
        selected = driver_count(conn, count_select(ct, condition), dialect)
    return RangePlan(ranges, estimate, hi_row is None, selected)


def sampled_bounds(
    conn: sa.Connection, ct: ChunkTable, dialect: str, n: int, hi: list[str]
) -> list[list[str]]:
    """The n - 1 inner boundaries of n ranges, cut at evenly spaced keys of a sample of the table's pages
    (PostgreSQL); none when the sample is too small to cut evenly. Ranges need not be even, only
    contiguous: readers take them off one queue, so an uneven cut costs balance, never rows."""
    if dialect != "postgresql":
        return []
    try:
        with conn.begin_nested():  # a server that cannot sample this table leaves the plan as it was
            percent = min(100.0, 100.0 * n * SAMPLE_PAGES_PER_RANGE / max(1, table_pages(conn, ct)))
            stmt = bind(sample_keys_select(ct, dialect, percent), dialect)
            keys = [list(row) for row in conn.execute(stmt, key_params("hi", hi))]
    except sa.exc.DBAPIError as exc:
        log.info(
            "%s: no sample of its pages (%s): ranges cut by stepping through the keys", ct.name, exc.orig
        )
        return []
    if len(keys) < n * MIN_SAMPLE_PER_RANGE:
        return []
    # distinct keys in key order, so these boundaries rise strictly, each below the largest key
    return [[str(v) for v in keys[i * len(keys) // n]] for i in range(1, n)]


def table_pages(conn: sa.Connection, ct: ChunkTable) -> int:
    """How many pages a PostgreSQL table holds (its partitions' for a partitioned table)."""
    pages = conn.execute(sa.text(TABLE_PAGES), {"rel": quoted_table(ct.schema, ct.name)}).scalar_one()
    return int(pages or 0)


def stepped_bounds(
    conn: sa.Connection, ct: ChunkTable, dialect: str, n: int, estimate: int, hi: list[str]
) -> list[list[str]]:
    """The inner boundaries of n ranges of about ``estimate / n`` keys each, stepping through the keys
    (an index-only scan of every key up to the last boundary)."""
    step = math.ceil(estimate / n)
    bounds: list[list[str]] = []
    for _ in range(n - 1):
        lo = bounds[-1] if bounds else None
        stmt = boundary_select(ct, dialect, after=lo is not None, step=step)
        params = {**key_params("lo", lo), **key_params("hi", hi)}
        row = conn.execute(bind(stmt, dialect), params).first()
        if row is None:
            break
        bounds.append([str(v) for v in row])
    return bounds


def driver_count(conn: sa.Connection, stmt: Any, dialect: str) -> int:
    """A count whose SQL holds a signal's condition, run as the engine runs its chunks: by the driver,
    on the SQL ``compile_sql`` wrote for it (a second parse would take its ``:`` for parameters and
    double its escaped ``%``)."""
    cur = conn.connection.cursor()
    try:
        cur.execute(compile_sql(stmt, dialect), {})
        return int(cur.fetchone()[0])
    finally:
        cur.close()


def bind(stmt: Any, dialect: str) -> sa.TextClause:
    """A compiled statement as text with :named parameters for SQLAlchemy's execute."""
    sql = compile_sql(stmt, dialect)
    return sa.text(re.sub(r"%\((\w+)\)s", r":\1", sql))
