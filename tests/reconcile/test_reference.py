"""The reference reconcile (docs/design.md §6), one rule per test on small hand-made streams."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.reference import (
    Change,
    ReadRow,
    Result,
    Window,
    find_windows,
    reconcile,
)

T = "s.t"
U = "s.u"
SIG = "s.cdc_signal"


def p(*parts: int) -> tuple[int, ...]:
    return parts


def ev(op: str, k: Any, pos: int, coll: str = T, unchanged: tuple[str, ...] = (), **row: Any) -> Change:
    """A row event of ``coll`` for key ``(k,)``; a delete (or ``after`` left empty for op u/d) removes."""
    after = None if op == "d" else {"id": k, **row}
    return Change(coll, op, (k,), after, p(pos), unchanged)


def truncate(pos: int, coll: str = T) -> Change:
    return Change(coll, "t", None, None, p(pos))


def signal(window_id: str, pos: int, op: str = "c") -> Change:
    kind = "snapshot-window-open" if window_id.endswith("-open") else "snapshot-window-close"
    after = None if op == "d" else {"id": window_id, "type": kind, "data": None}
    return Change(SIG, op, (window_id,), after, p(pos), window_id=window_id)


def window(chunk: str, low: int, high: int) -> list[Change]:
    return [signal(f"{chunk}-open", low), signal(f"{chunk}-close", high)]


def read(chunk: str, k: Any, coll: str = T, **row: Any) -> ReadRow:
    return ReadRow(coll, chunk, (k,), {"id": k, **row})


def run(changes: list[Change], reads: Iterable[ReadRow] = (), **kw: Any) -> Result:
    return reconcile(changes, reads, signal_table=SIG, **kw)


# --- windows -----------------------------------------------------------------------------------------


def test_find_windows_insert_insert() -> None:
    found = find_windows([*window("a", 2, 5), signal("b-open", 7), ev("c", 1, 3)])
    assert found == {"a": Window("a", p(2), p(5)), "b": Window("b", p(7), None)}


def test_find_windows_insert_delete_closes_with_the_delete_of_the_open_row() -> None:
    found = find_windows([signal("a-open", 2), signal("a-open", 6, op="d")])
    assert found == {"a": Window("a", p(2), p(6))}


def test_find_windows_ignores_a_close_without_open_and_a_close_before_its_open() -> None:
    found = find_windows([signal("x-close", 1), signal("a-close", 2), signal("a-open", 3)])
    assert found == {"a": Window("a", p(3), None)}


def test_find_windows_duplicate_open_keeps_the_first_position() -> None:
    found = find_windows([signal("a-open", 4), signal("a-open", 2), signal("a-close", 9)])
    assert found == {"a": Window("a", p(2), p(9))}


def test_find_windows_looks_only_at_window_signals() -> None:
    # A row of the signal table without window_id (an execute-snapshot signal) marks nothing.
    plain = Change(SIG, "c", ("a-open",), {"id": "a-open"}, p(1))
    assert find_windows([plain]) == {}


# --- §6.2 READ inside / outside its window -------------------------------------------------------------


def test_read_kept_when_events_are_outside_the_window() -> None:
    res = run(
        [ev("c", 1, 1, v="old"), *window("a", 2, 5), ev("u", 2, 6, v="late")],
        [read("a", 1, v="r1"), read("a", 2, v="r2")],
    )
    assert (res.reads_applied, res.reads_dropped) == (2, 0)
    # The READ overrides the older event; the later event overrides the READ.
    assert res.state[T] == {(1,): {"id": 1, "v": "r1"}, (2,): {"id": 2, "v": "late"}}


def test_read_dropped_when_an_event_is_inside_the_window() -> None:
    res = run([ev("c", 1, 1, v="old"), *window("a", 2, 5), ev("u", 1, 3, v="new")], [read("a", 1, v="stale")])
    assert (res.reads_applied, res.reads_dropped) == (0, 1)
    assert res.state[T] == {(1,): {"id": 1, "v": "new"}}


def test_event_exactly_at_low_does_not_drop_the_read() -> None:
    res = run([ev("u", 1, 2, v="at-low"), *window("a", 2, 5)], [read("a", 1, v="r")])
    assert (res.reads_applied, res.reads_dropped) == (1, 0)
    assert res.state[T][(1,)] == {"id": 1, "v": "r"}


def test_event_exactly_at_high_does_not_drop_the_read_and_the_read_wins() -> None:
    res = run([*window("a", 2, 5), ev("u", 1, 5, v="at-high")], [read("a", 1, v="r")])
    assert (res.reads_applied, res.reads_dropped) == (1, 0)
    assert res.state[T][(1,)] == {"id": 1, "v": "r"}


def test_delete_at_high_does_not_beat_the_read_either() -> None:
    res = run([*window("a", 2, 5), ev("d", 1, 5)], [read("a", 1, v="r")])
    assert res.state[T] == {(1,): {"id": 1, "v": "r"}}


def test_stream_read_event_is_an_ordinary_event_and_drops_a_chunk_read() -> None:
    # Op r inside the stream (Debezium's own snapshot) counts like any change at its position.
    res = run([*window("a", 2, 5), ev("r", 1, 3, v="dbz")], [read("a", 1, v="ours")])
    assert res.reads_dropped == 1
    assert res.state[T] == {(1,): {"id": 1, "v": "dbz"}}


def test_truncate_inside_the_window_drops_every_read_of_that_collection() -> None:
    # The chunk may have been read before the truncate: its rows must not come back.
    res = run(
        [ev("c", 1, 1, v="x"), *window("a", 2, 5), truncate(3), *window("b", 6, 8)],
        [read("a", 1, v="r"), read("b", 2, v="s"), read("a", 7, coll=U, v="u")],
    )
    assert (res.reads_applied, res.reads_dropped) == (2, 1)
    assert res.state == {T: {(2,): {"id": 2, "v": "s"}}, U: {(7,): {"id": 7, "v": "u"}}}


# --- §6.1 waiting -------------------------------------------------------------------------------------


def test_read_waits_while_its_window_is_only_open() -> None:
    res = run([signal("a-open", 2), ev("c", 9, 3, v="x")], [read("a", 1, v="r"), read("a", 2, v="r")])
    assert res.reads_waiting == ["a"]
    assert (res.reads_applied, res.reads_dropped) == (0, 0)
    assert res.state == {T: {(9,): {"id": 9, "v": "x"}}}
    assert res.open_windows == {"a": Window("a", p(2), None, frozenset({(T, (9,))}))}


def test_read_waits_without_any_window() -> None:
    res = run([ev("c", 9, 3, v="x")], [read("zz", 1, v="r")])
    assert res.reads_waiting == ["zz"]
    assert res.reads_applied == res.reads_dropped == 0
    assert (1,) not in res.state[T]


def test_insert_delete_watermarking_closes_the_window() -> None:
    changes = [signal("a-open", 2), ev("u", 2, 3, v="in"), signal("a-open", 5, op="d")]
    res = run(changes, [read("a", 1, v="r1"), read("a", 2, v="r2")])
    assert res.reads_waiting == []
    assert (res.reads_applied, res.reads_dropped) == (1, 1)
    assert res.state[T] == {(1,): {"id": 1, "v": "r1"}, (2,): {"id": 2, "v": "in"}}
    assert res.open_windows == {}


# --- snapshot anomalies ---------------------------------------------------------------------------------


def test_delete_inside_the_window_keeps_the_row_deleted() -> None:
    res = run(
        [ev("c", 1, 1, v="x"), *window("a", 2, 5), ev("d", 1, 3)], [read("a", 1, v="read-before-delete")]
    )
    assert res.reads_dropped == 1
    assert T not in res.state
    assert res.deleted_keys == 1


def test_insert_during_snapshot_is_neither_lost_nor_doubled() -> None:
    # Key 2 is inserted inside the window and also read by the chunk; key 3 after the window.
    changes = [*window("a", 2, 5), ev("c", 2, 3, v="stream"), ev("c", 3, 6, v="after")]
    res = run(changes, [read("a", 1, v="r1"), read("a", 2, v="r2")])
    assert res.state[T] == {
        (1,): {"id": 1, "v": "r1"},
        (2,): {"id": 2, "v": "stream"},
        (3,): {"id": 3, "v": "after"},
    }


def test_primary_key_change_is_a_delete_of_the_old_key_and_a_create_of_the_new() -> None:
    res = run([ev("c", 1, 1, v="x"), ev("d", 1, 2), ev("c", 10, 2, v="x")])
    assert res.state[T] == {(10,): {"id": 10, "v": "x"}}
    assert res.deleted_keys == 1


def test_pk_change_inside_a_window_drops_the_stale_read_of_the_old_key() -> None:
    changes = [ev("c", 1, 1, v="x"), *window("a", 2, 6), ev("d", 1, 3), ev("c", 10, 3, v="x")]
    res = run(changes, [read("a", 1, v="x")])
    assert res.state[T] == {(10,): {"id": 10, "v": "x"}}


# --- truncate -----------------------------------------------------------------------------------------


def test_truncate_removes_keys_written_before_it_and_keeps_later_ones() -> None:
    previous = {T: {(0,): {"id": 0, "v": "prev"}}, U: {(0,): {"id": 0}}}
    changes = [
        ev("c", 1, 1, v="a"),
        ev("c", 2, 2, v="b"),
        truncate(3),
        ev("u", 2, 4, v="b2"),
        ev("c", 3, 5, v="c"),
    ]
    res = run(changes, previous=previous)
    assert res.state == {T: {(2,): {"id": 2, "v": "b2"}, (3,): {"id": 3, "v": "c"}}, U: {(0,): {"id": 0}}}
    assert res.deleted_keys == 2  # key 0 from the previous state and key 1
    assert res.position[T] == p(5)


def test_truncate_removes_read_rows_placed_before_it() -> None:
    res = run([*window("a", 2, 4), truncate(6)], [read("a", 1, v="r")])
    assert res.reads_applied == 1
    assert T not in res.state


def test_truncate_of_another_collection_leaves_this_one_alone() -> None:
    res = run([ev("c", 1, 1, v="a"), truncate(2, coll=U)])
    assert res.state == {T: {(1,): {"id": 1, "v": "a"}}}


# --- TOAST --------------------------------------------------------------------------------------------


def test_unchanged_toast_keeps_the_previous_value_from_the_stream() -> None:
    changes = [
        ev("c", 1, 1, v="a", big="BLOB"),
        ev("u", 1, 2, unchanged=("big",), v="b", big="__debezium_unavailable_value"),
    ]
    res = run(changes)
    assert res.state[T] == {(1,): {"id": 1, "v": "b", "big": "BLOB"}}


def test_unchanged_toast_keeps_the_value_from_the_previous_state() -> None:
    previous = {T: {(1,): {"id": 1, "v": "a", "big": "BLOB"}}}
    res = run([ev("u", 1, 2, unchanged=("big",), v="b")], previous=previous)
    assert res.state[T] == {(1,): {"id": 1, "v": "b", "big": "BLOB"}}
    assert previous == {T: {(1,): {"id": 1, "v": "a", "big": "BLOB"}}}  # not mutated


def test_unchanged_toast_keeps_the_value_from_a_read_row() -> None:
    changes = [*window("a", 2, 4), ev("u", 1, 5, unchanged=("big",), v="b")]
    res = run(changes, [read("a", 1, v="a", big="BLOB")])
    assert res.state[T] == {(1,): {"id": 1, "v": "b", "big": "BLOB"}}


def test_unchanged_toast_without_a_previous_row_leaves_the_column_absent() -> None:
    res = run([ev("u", 1, 2, unchanged=("big",), v="b")])
    assert res.state[T] == {(1,): {"id": 1, "v": "b"}}


def test_unchanged_toast_after_a_delete_leaves_the_column_absent() -> None:
    changes = [ev("c", 1, 1, big="BLOB"), ev("d", 1, 2), ev("u", 1, 3, unchanged=("big",), v="b")]
    assert run(changes).state[T] == {(1,): {"id": 1, "v": "b"}}


# --- duplicates, ties, non-state events -----------------------------------------------------------------


def test_duplicate_landing_of_the_same_event_is_harmless() -> None:
    changes = [
        ev("c", 1, 1, v="a", big="BLOB"),
        ev("u", 1, 2, unchanged=("big",), v="b"),
        ev("u", 1, 2, unchanged=("big",), v="b"),
        ev("d", 2, 3),
        ev("d", 2, 3),
        truncate(4, coll=U),
        truncate(4, coll=U),
    ]
    once = [c for i, c in enumerate(changes) if c not in changes[:i]]
    assert run(changes).state == run(once).state
    assert run(changes).state == {T: {(1,): {"id": 1, "v": "b", "big": "BLOB"}}}


def test_duplicate_landing_of_a_window_and_its_rows_is_harmless() -> None:
    changes = [*window("a", 2, 5), *window("a", 2, 5)]
    reads = [read("a", 1, v="r"), read("a", 1, v="r")]
    res = run(changes, reads)
    assert res.state == {T: {(1,): {"id": 1, "v": "r"}}}


def test_same_chunk_landed_under_two_chunk_ids_the_later_window_wins() -> None:
    # The engine crashed after landing chunk a and re-read the same keys as chunk b.
    changes = [*window("a", 2, 4), ev("u", 1, 5, v="between"), *window("b", 6, 8)]
    res = run(changes, [read("b", 1, v="second"), read("a", 1, v="first")])
    assert (res.reads_applied, res.reads_dropped) == (2, 0)
    assert res.state[T] == {(1,): {"id": 1, "v": "second"}}


def test_equal_positions_keep_input_order() -> None:
    res = run([ev("u", 1, 3, v="first"), ev("u", 1, 3, v="second")])
    assert res.state[T][(1,)]["v"] == "second"


def test_messages_heartbeats_and_the_signal_table_stay_out_of_the_state() -> None:
    changes = [
        Change(None, "m", None, None, p(1)),
        Change(T, "h", None, None, p(2)),
        *window("a", 3, 4),
        ev("c", 1, 5, v="a"),
    ]
    res = run(changes)
    assert res.state == {T: {(1,): {"id": 1, "v": "a"}}}
    assert res.position == {T: p(5)}


def test_without_signal_collection_the_signal_rows_are_ordinary_rows() -> None:
    res = reconcile([*window("a", 3, 4)], [])
    assert set(res.state[SIG]) == {("a-open",), ("a-close",)}


def test_position_counts_stream_events_and_window_highs() -> None:
    res = run([ev("c", 1, 1, coll=U), *window("a", 2, 7)], [read("a", 1)])
    assert res.position == {U: p(1), T: p(7)}


def test_row_event_without_key_is_refused() -> None:
    with pytest.raises(ValueError, match="without a key"):
        run([Change(T, "u", None, {"id": 1}, p(1))])


def test_carried_window_must_be_open() -> None:
    with pytest.raises(ValueError, match="closed window"):
        run([], open_windows={"a": Window("a", p(1), p(2))})


# --- order of the input -----------------------------------------------------------------------------------

# A stream with every rule at once, positions of two parts (commit, change) as the capture writes them.
MIXED_CHANGES = [
    Change(T, "c", (1,), {"id": 1, "v": "a", "big": "B1"}, p(1, 0)),
    Change(T, "c", (2,), {"id": 2, "v": "a"}, p(1, 1)),
    Change(SIG, "c", ("a-open",), {"id": "a-open"}, p(2, 0), window_id="a-open"),
    Change(T, "u", (2,), {"id": 2, "v": "in-window"}, p(3, 0)),
    Change(T, "u", (2,), {"id": 2, "v": "in-window"}, p(3, 0)),  # duplicate landing
    Change(SIG, "c", ("a-close",), {"id": "a-close"}, p(4, 0), window_id="a-close"),
    Change(T, "u", (1,), {"id": 1, "v": "b"}, p(5, 0), unchanged=("big",)),
    Change(U, "t", None, None, p(5, 1)),
    Change(SIG, "c", ("b-open",), {"id": "b-open"}, p(6, 0), window_id="b-open"),
    Change(U, "c", (9,), {"id": 9}, p(6, 1)),
    Change(SIG, "d", ("b-open",), None, p(7, 0), window_id="b-open"),
    Change(T, "d", (3,), None, p(8, 0)),
    Change(T, "c", (30,), {"id": 30, "v": "pk-changed"}, p(8, 0)),
    Change(SIG, "c", ("c-open",), {"id": "c-open"}, p(9, 0), window_id="c-open"),
    Change(None, "h", None, None, p(9, 1)),
]
MIXED_READS = [
    read("a", 1, v="r", big="B0"),
    read("a", 2, v="stale"),
    read("a", 3, v="r"),
    read("b", 8, coll=U),
    read("b", 9, coll=U),
    read("c", 4, v="waits"),
]


@pytest.mark.parametrize("seed", [0, 1, 2024])
def test_shuffled_input_gives_the_same_result(seed: int) -> None:
    expected = run(MIXED_CHANGES, MIXED_READS)
    assert expected.state == {
        T: {
            (1,): {"id": 1, "v": "b", "big": "B0"},
            (2,): {"id": 2, "v": "in-window"},
            (30,): {"id": 30, "v": "pk-changed"},
        },
        U: {(8,): {"id": 8}, (9,): {"id": 9}},
    }
    # Dropped: key 2 (updated inside window a) and key 9 (inserted inside window b).
    assert (expected.reads_applied, expected.reads_dropped, expected.reads_waiting) == (3, 2, ["c"])
    rng = random.Random(seed)
    changes, reads = list(MIXED_CHANGES), list(MIXED_READS)
    rng.shuffle(changes)
    rng.shuffle(reads)
    assert run(changes, reads) == expected


# --- incremental runs (§6.6) -------------------------------------------------------------------------------

COLLECTIONS = (T, U)
CHUNK_COLLECTION = {"w0": T, "w1": T, "w2": U}

_row_step = st.tuples(
    st.just("row"),
    st.sampled_from(COLLECTIONS),
    st.sampled_from("cudr"),
    st.integers(1, 3),
    st.integers(0, 9),
    st.booleans(),
)
_step = st.one_of(
    _row_step,
    st.tuples(st.just("truncate"), st.sampled_from(COLLECTIONS)),
    st.tuples(st.just("open"), st.sampled_from(sorted(CHUNK_COLLECTION))),
    st.tuples(st.just("close"), st.sampled_from(sorted(CHUNK_COLLECTION)), st.booleans()),
    st.tuples(st.just("dup")),
)
# One row per key and chunk, as a keyset query reads them (a duplicate landing repeats the chunk id).
_reads = st.lists(
    st.tuples(st.sampled_from(sorted(CHUNK_COLLECTION)), st.integers(1, 3), st.integers(0, 9)),
    max_size=8,
    unique_by=lambda r: (r[0], r[1]),
)
_previous = st.dictionaries(
    st.tuples(st.sampled_from(COLLECTIONS), st.integers(1, 3)), st.integers(0, 9), max_size=4
)


def _change(step: tuple[Any, ...], i: int) -> Change:
    """One generated step at position (i, 0): unique positions, in stream order."""
    kind, pos = step[0], p(i, 0)
    if kind == "row":
        _, coll, op, k, v, toast = step
        if op == "d":
            return Change(coll, op, (k,), None, pos)
        if op == "u" and toast:
            return Change(coll, op, (k,), {"id": k, "v": v}, pos, unchanged=("big",))
        return Change(coll, op, (k,), {"id": k, "v": v, "big": f"B{v}"}, pos)
    if kind == "truncate":
        return Change(step[1], "t", None, None, pos)
    if kind == "open":
        wid = f"{step[1]}-open"
        return Change(SIG, "c", (wid,), {"id": wid}, pos, window_id=wid)
    chunk, delete_strategy = step[1], step[2]
    if delete_strategy:
        return Change(SIG, "d", (f"{chunk}-open",), None, pos, window_id=f"{chunk}-open")
    return Change(SIG, "c", (f"{chunk}-close",), {"id": f"{chunk}-close"}, pos, window_id=f"{chunk}-close")


def _stream(steps: list[tuple[Any, ...]]) -> list[Change]:
    changes: list[Change] = []
    opened: set[str] = set()
    for i, step in enumerate(steps):
        if step[0] == "dup":
            if changes:  # the same record landed twice: same change, same position
                changes.append(changes[-1])
            continue
        if step[0] == "open":
            # A chunk id is a fresh UUID: its open is written once (a re-landed copy is a "dup").
            if step[1] in opened:
                continue
            opened.add(step[1])
        changes.append(_change(step, i))
    return changes


def _read_rows(raw: list[tuple[str, int, int]]) -> list[ReadRow]:
    return [ReadRow(CHUNK_COLLECTION[c], c, (k,), {"id": k, "v": v, "big": f"R{v}"}) for c, k, v in raw]


def _previous_state(raw: dict[tuple[str, int], int]) -> dict[str, dict[tuple[Any, ...], dict[str, Any]]]:
    state: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {}
    for (coll, k), v in raw.items():
        state.setdefault(coll, {})[(k,)] = {"id": k, "v": v, "big": f"P{v}"}
    return state


@settings(max_examples=400, deadline=None)
@given(steps=st.lists(_step, max_size=30), raw_reads=_reads, raw_previous=_previous, data=st.data())
def test_two_incremental_runs_equal_one_run_over_everything(
    steps: list[tuple[Any, ...]],
    raw_reads: list[tuple[str, int, int]],
    raw_previous: dict[tuple[str, int], int],
    data: st.DataObject,
) -> None:
    changes, reads, previous = _stream(steps), _read_rows(raw_reads), _previous_state(raw_previous)
    split = data.draw(st.integers(0, len(changes)), label="split")
    head, tail = changes[:split], changes[split:]
    # A run only receives READ chunks whose close it sees; the others go to the next run.
    closed_in_head = {c for c, w in find_windows(head).items() if w.high is not None}
    early = [r for r in reads if r.chunk_id in closed_in_head]
    late = [r for r in reads if r.chunk_id not in closed_in_head]

    whole = run(changes, reads, previous=previous)
    first = run(head, early, previous=previous)
    second = run(tail, late, previous=first.state, open_windows=first.open_windows)

    assert second.state == whole.state
    assert second.open_windows == whole.open_windows
    assert second.reads_waiting == whole.reads_waiting
    assert first.reads_applied + second.reads_applied == whole.reads_applied
    assert first.reads_dropped + second.reads_dropped == whole.reads_dropped


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(_step, max_size=30), raw_reads=_reads, seed=st.integers(0, 2**32 - 1))
def test_any_input_order_gives_the_same_result(
    steps: list[tuple[Any, ...]], raw_reads: list[tuple[str, int, int]], seed: int
) -> None:
    changes, reads = _stream(steps), _read_rows(raw_reads)
    shuffled_changes, shuffled_reads = list(changes), list(reads)
    random.Random(seed).shuffle(shuffled_changes)
    random.Random(seed).shuffle(shuffled_reads)
    assert run(shuffled_changes, shuffled_reads) == run(changes, reads)


def test_window_straddling_two_runs_still_drops_a_read_changed_in_the_first() -> None:
    first = run([ev("c", 1, 1, v="x"), signal("a-open", 2), ev("u", 1, 3, v="new")])
    assert first.open_windows == {"a": Window("a", p(2), None, frozenset({(T, (1,))}))}
    second = run(
        [signal("a-close", 5)],
        [read("a", 1, v="stale")],
        previous=first.state,
        open_windows=first.open_windows,
    )
    assert second.reads_dropped == 1
    assert second.state[T] == {(1,): {"id": 1, "v": "new"}}
    assert second.open_windows == {}


def test_unchanged_column_comes_from_a_read_dropped_by_the_same_update() -> None:
    """A TOAST-only update inside a READ's window drops the READ; the READ still supplies the column the
    update did not send (it was constant across the window), found by the snapshot torture test."""
    from tests.support.reference import Change, ReadRow, reconcile

    sig = "s.sig"
    changes = [
        Change(sig, "c", ("w-open",), {"id": "w-open"}, (10, 1), window_id="w-open"),
        Change("s.t", "u", (1,), {"id": 1, "amount": 5}, (11, 1), unchanged=("doc",)),
        Change(sig, "c", ("w-close",), {"id": "w-close"}, (12, 1), window_id="w-close"),
    ]
    reads = [ReadRow("s.t", "w", (1,), {"id": 1, "amount": 4, "doc": "big"})]
    result = reconcile(changes, reads, signal_table=sig)
    assert result.reads_dropped == 1
    assert result.state["s.t"][(1,)] == {"id": 1, "amount": 5, "doc": "big"}
