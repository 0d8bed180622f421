"""What a roll manifest counts of each collection's events."""

from __future__ import annotations

from cdc_backfill.eventlog.counts import KEYS, event_counts, valid_counts


def test_events_are_counted_by_op_and_by_the_columns_they_left_unchanged() -> None:
    ops = b"cuudrtcc"
    unchanged = [None, ["note"], [], ["note"], None, None, ["note", "body"], None]
    assert event_counts(ops, unchanged) == {
        "c": 3, "u": 2, "d": 1, "r": 1, "t": 1,
        "left_out": 1,  # the create that left columns out: a key change of a TOASTed row
        "unchanged": 2,  # the update and that create; a delete's unchanged list says nothing
    }  # fmt: skip


def test_counts_of_another_shape_do_not_count() -> None:
    good = {"public.orders": dict.fromkeys(KEYS, 1)}
    assert valid_counts(good) == good
    assert valid_counts(None) is None
    assert valid_counts({"public.orders": {"c": 1}}) is None  # a key missing
    assert valid_counts({"public.orders": {**dict.fromkeys(KEYS, 1), "d": "1"}}) is None
    assert valid_counts([1]) is None
