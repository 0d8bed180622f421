from __future__ import annotations

import json

from cdc_backfill.verify.compare import RangeStats, compare, render
from cdc_backfill.verify.ranges import Bound, key_ranges

RANGES = key_ranges([Bound(("10",), ("10",)), Bound(("20",), ("20",))])


def test_equal_ranges() -> None:
    stats = {0: RangeStats(10, 123), 1: RangeStats(10, 456), 2: RangeStats(3, 7)}
    report = compare("public.orders", ["id"], RANGES, stats, dict(stats))
    assert report.all_equal and report.differing == []
    text = render(report)
    assert "every range equal" in text and "NO" not in text
    assert "(start)" in text and "(end)" in text


def test_a_count_or_a_hash_that_differs_marks_the_range() -> None:
    source = {0: RangeStats(10, 123), 1: RangeStats(10, 456), 2: RangeStats(3, 7)}
    state = {0: RangeStats(10, 124), 1: RangeStats(10, 456)}  # range 2 has no rows in the state
    report = compare("public.orders", ["id"], RANGES, source, state)
    assert report.differing == [0, 2]
    assert report.summary() == {
        "ranges": 3, "equal": 1, "differing": 2, "changing": 0, "source_rows": 23, "state_rows": 20
    }  # fmt: skip
    text = render(report)
    assert "2 of 3 ranges differ: 0, 2" in text
    doc = json.loads(json.dumps(report.to_dict()))
    assert doc["all_equal"] is False and doc["differing"] == [0, 2]
    assert doc["ranges"][2] == {
        "index": 2, "after": ["20"], "upto": None, "source_rows": 3, "state_rows": 0,
        "source_hash": "7", "state_hash": "0", "equal": False,
    }  # fmt: skip


def test_hash_sums_beyond_two_to_the_53_survive_json() -> None:
    big = 2**60 * 1000 + 1
    report = compare("t", ["id"], key_ranges([]), {0: RangeStats(1000, big)}, {0: RangeStats(1000, big)})
    assert report.to_dict()["ranges"][0]["source_hash"] == str(big)


def test_long_bounds_are_cut_in_the_table() -> None:
    ranges = key_ranges([Bound(("x" * 100,), ("x" * 100,))])
    text = render(compare("t", ["w"], ranges, {}, {}))
    assert "x" * 25 + "..." in text and "x" * 26 not in text
