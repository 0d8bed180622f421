from __future__ import annotations

import itertools

import pytest

from cdc_backfill.verify.ranges import Bound, boundary_rows, key_ranges, runs


@pytest.mark.parametrize(
    ("count", "ranges", "rows"),
    [
        (100, 4, [25, 50, 75]),
        (10, 3, [4, 7]),
        (3, 16, [1, 2]),  # fewer rows than ranges: one row per range
        (1, 16, []),
        (0, 16, []),
        (1000, 1, []),
    ],
)
def test_boundary_rows(count: int, ranges: int, rows: list[int]) -> None:
    assert boundary_rows(count, ranges) == rows


def test_boundary_rows_cut_nearly_equal_ranges() -> None:
    for count in (17, 1000, 12_345):
        for ranges in (2, 7, 16):
            cuts = [0, *boundary_rows(count, ranges), count]
            sizes = [b - a for a, b in itertools.pairwise(cuts)]
            assert len(sizes) == ranges and max(sizes) - min(sizes) <= 1


def test_ranges_have_open_ends() -> None:
    b1, b2 = Bound(("10",), ("10",)), Bound(("20",), ("20",))
    r = key_ranges([b1, b2])
    assert [(x.index, x.lo, x.hi) for x in r] == [(0, None, b1), (1, b1, b2), (2, b2, None)]
    assert key_ranges([])[0].lo is None and key_ranges([])[0].hi is None
    assert r[1].to_dict() == {"index": 1, "after": ["10"], "upto": ["20"]}
    assert Bound(("1", "a"), ("1", "a")).label() == "(1, a)"


def test_runs() -> None:
    assert runs([7, 1, 2, 3]) == [(1, 3), (7, 7)]
    assert runs([]) == []
    with pytest.raises(ValueError, match="at least 1"):
        boundary_rows(10, 0)
