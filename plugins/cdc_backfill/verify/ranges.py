"""Key ranges: where they are cut and how they are named (pure).

Ranges are cut at keys read from the source (keys are compared only by the databases, never in Python):
range ``i`` holds the keys ``lo < key <= hi``; the first has no ``lo`` and the last no ``hi``, so a key
that is only in the state (below the smallest or above the largest source key) still falls in a range.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

DEFAULT_RANGES = 16
MAX_RANGES = 1_000  # every row is compared with up to this many boundaries, on both sides


@dataclass(frozen=True)
class Bound:
    """A key at a range boundary, as two texts per key column (see ``forms``)."""

    sql: tuple[str, ...]  # the server's text of each key column: SQL literals are written from it
    spark: tuple[str, ...]  # what Spark compares each key column by, as text

    def label(self) -> str:
        return self.sql[0] if len(self.sql) == 1 else "(" + ", ".join(self.sql) + ")"


@dataclass(frozen=True)
class KeyRange:
    index: int
    lo: Bound | None  # exclusive; None: from the smallest key
    hi: Bound | None  # inclusive; None: to the largest key and beyond

    def to_dict(self) -> dict[str, object]:
        return {
            "index": self.index,
            "after": list(self.lo.sql) if self.lo else None,
            "upto": list(self.hi.sql) if self.hi else None,
        }


def boundary_rows(count: int, ranges: int) -> list[int]:
    """Row numbers (1-based, in key order) of the keys that end each range but the last: ``ranges``
    ranges of nearly equal size, fewer when the table has fewer rows than that."""
    if ranges < 1:
        raise ValueError(f"ranges must be at least 1, not {ranges}")
    rows = {-(-i * count // ranges) for i in range(1, ranges)}  # ceil(i * count / ranges)
    return sorted(r for r in rows if 1 <= r < count)


def key_ranges(bounds: Sequence[Bound]) -> list[KeyRange]:
    """The ranges that ``bounds`` (ascending) cut the key space into: one more than there are bounds."""
    edges: list[Bound | None] = [None, *bounds, None]
    return [KeyRange(i, edges[i], edges[i + 1]) for i in range(len(bounds) + 1)]


def runs(indexes: Iterable[int]) -> list[tuple[int, int]]:
    """Consecutive indexes as (first, last) pairs: ``[1, 2, 3, 7]`` -> ``[(1, 3), (7, 7)]``."""
    out: list[tuple[int, int]] = []
    for i in sorted(set(indexes)):
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out
