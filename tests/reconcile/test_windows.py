"""A run's windows and snapshot marks from the signal rows (pure, no Spark)."""

from __future__ import annotations

import json

from cdc_backfill.events.positions import position_key
from cdc_backfill.reconcile.windows import SignalRow, Window, data_field, find_windows, run_marks

ORDERS = "public.orders"


def row(rid: str, op: str, at: int, data: object = None, kind: str | None = None) -> SignalRow:
    text = data if isinstance(data, str) or data is None else json.dumps(data)
    return SignalRow(rid, op, position_key((at, 0)), text, kind)


def key(at: int) -> bytes:
    return position_key((at, 0))


def test_a_window_closes_at_the_first_close_after_its_open() -> None:
    engine = {"data-collection": ORDERS, "signal": "s1"}
    rows = [
        row("a-open", "c", 10, engine),
        row("a-close", "c", 20, engine),
        row("a-close", "c", 30, engine),  # written again: the first close counts
        row("b-open", "c", 40),  # Debezium's insert_delete: the delete of the open row closes it
        row("b-open", "d", 45),
        row("c-open", "c", 50, engine),  # not closed yet
        row("other", "c", 55, engine),
    ]
    assert find_windows(rows) == [
        Window("a", ORDERS, "s1", key(10), key(20)),
        Window("b", None, None, key(40), key(45)),
        Window("c", ORDERS, "s1", key(50), None),
    ]


def test_an_open_written_twice_counts_from_the_first_and_closes_before_it_do_not_count() -> None:
    rows = [row("a-open", "c", 12, {"signal": "s2"}), row("a-open", "r", 11, {"signal": "s1"}),
            row("a-close", "c", 15), row("z-close", "c", 5), row("z-open", "c", 9)]  # fmt: skip
    # a: the least low and the greatest of the texts; z: its only close is before it, so no window
    assert find_windows(rows) == [Window("a", None, "s2", key(11), key(15))]


def test_data_fields_read_as_spark_reads_them() -> None:
    assert data_field('{"data-collection": "public.orders"}', "data-collection") == ORDERS
    assert data_field('{"signal": 7}', "signal") == "7"
    assert data_field('{"signal": {"a": [1, 2]}}', "signal") == '{"a":[1,2]}'
    assert data_field('{"signal": null}', "signal") is None
    assert data_field("not json", "signal") is None
    assert data_field("[1]", "signal") is None
    assert data_field(None, "signal") is None


def test_marks_of_the_collection_and_debeziums_starts() -> None:
    mine = {"data-collection": ORDERS, "signal": "s1"}
    rows = [
        row("s1-orders-start", "c", 5, mine),
        row("s1-orders-done", "c", 90, {**mine, "chunks": 3}),
        row("s1-tags-done", "c", 91, {"data-collection": "public.tags", "signal": "s1"}),
        row("s1-orders-ended", "d", 92, mine),  # a delete is no mark
        row("bad-done", "c", 93, "{not json"),
        row(
            "x1",
            "c",
            3,
            {"data-collections": ["public\\.orders"], "type": "incremental"},
            kind="execute-snapshot",
        ),
    ]
    marks = run_marks(rows, ORDERS)
    assert [(m.kind, m.signal, m.position) for m in marks] == [
        ("start", "s1", (5, 0)),
        ("done", "s1", (90, 0)),
    ]
    starts = run_marks(rows, ORDERS, executes=True)[2:]
    assert [(m.kind, m.signal, m.position) for m in starts] == [("start", "x1", (3, 0))]
