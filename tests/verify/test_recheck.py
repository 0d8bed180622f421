"""The re-check of ranges that differ when the source is not read at one position (pure)."""

from __future__ import annotations

import json

from cdc_backfill.verify.compare import RangeStats, compare, render
from cdc_backfill.verify.ranges import Bound, key_ranges
from cdc_backfill.verify.recheck import pending, recheck

RANGES = key_ranges([Bound(("10",), ("10",)), Bound(("20",), ("20",)), Bound(("30",), ("30",))])
A, B, C = RangeStats(10, 1), RangeStats(11, 2), RangeStats(12, 3)


def first() -> object:
    # ranges 1, 2 and 3 differ at the first read; range 0 is equal
    return compare("public.orders", ["id"], RANGES, {0: A, 1: A, 2: A, 3: A}, {0: A, 1: B, 2: B, 3: B})


def test_each_range_is_judged_by_the_two_reads_around_the_state() -> None:
    report = first()
    assert pending(report, first=True) == [1, 2, 3]
    before = {0: A, 1: B, 2: A, 3: A}
    state = {0: A, 1: B, 2: C, 3: B}
    after = {0: A, 1: C, 2: A, 3: C}
    done = recheck(report, [1, 2, 3], before, state, after)
    # 1: the state equals the first read (it was behind); 2: both reads agree, the state does not;
    # 3: the reads disagree and the state matches neither
    assert done.differing == [2] and done.changing == (3,) and not done.all_equal
    assert done.summary()["equal"] == 2 and done.summary()["changing"] == 1
    text = render(done)
    assert "1 of 4 ranges differ: 2; 1 of 4 kept changing while verified: 3" in text
    assert json.loads(json.dumps(done.to_dict()))["changing"] == [3]


def test_a_range_that_settles_on_a_later_recheck_is_equal() -> None:
    once = recheck(first(), [1, 2, 3], {1: A, 2: A, 3: A}, {1: C, 2: C, 3: C}, {1: B, 2: B, 3: B})
    assert once.changing == (1, 2, 3) and once.differing == []
    assert pending(once, first=False) == [1, 2, 3]
    twice = recheck(once, [1, 2, 3], {1: C, 2: A, 3: B}, {1: C, 2: C, 3: C}, {1: C, 2: A, 3: A})
    assert twice.differing == [2] and twice.changing == (3,)
    assert pending(twice, first=False) == [3]  # a range found to differ stays so
    third = recheck(twice, [3], {3: C}, {3: C}, {3: C})
    assert third.differing == [2] and third.changing == ()
