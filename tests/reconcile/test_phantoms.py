"""Which snapshots are finished, from the start and done rows and the chunks judged (pure)."""

from __future__ import annotations

import json

from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.key_conditions import Compare
from cdc_backfill.reconcile.phantoms import Removal, SnapshotTrack, advance, decide, report
from cdc_backfill.reconcile.runs import RunMeta
from cdc_backfill.signals.marks import Mark, done_data, mark_of, start_data

KEY = [PgColumn("id", "integer", 23)]


def start(pos: int) -> Mark:
    m = mark_of("a-start", json.loads(start_data("s.t", "sig")), (pos,))
    assert m is not None
    return m


def done(pos: int, chunks: int, condition: str | None = None) -> Mark:
    m = mark_of("b-done", json.loads(done_data("s.t", "sig", chunks, condition, "postgresql")), (pos,))
    assert m is not None
    return m


def test_a_snapshot_is_decided_once_its_done_row_and_every_chunk_are_in() -> None:
    tracks = advance({}, [start(5)], {"sig": 1})
    assert decide(tracks, KEY) == (tracks, [])
    assert report(tracks) == {
        "sig": "waiting: not finished: 1 chunk(s) applied, no done row in the stream yet"
    }
    tracks = advance(tracks, [done(40, 3)], {"sig": 1})
    assert decide(tracks, KEY)[1] == [] and report(tracks)["sig"] == "waiting: 2 of 3 chunk(s) applied"
    tracks = advance(tracks, [], {"sig": 1})
    tracks, removals = decide(tracks, KEY)
    assert removals == [Removal("sig", (5,), None)]
    assert report(tracks) == {"sig": "rows before its start removed"}
    # decided: a chunk or a done row seen again changes nothing
    assert advance(tracks, [done(50, 9)], {"sig": 4}) == tracks
    # what a state version keeps reads back the same
    meta = RunMeta(frozenset({"c"}), (40,), tracks)
    assert RunMeta.from_json(json.loads(json.dumps(meta.to_json()))) == meta


def test_a_start_row_written_again_after_a_crash_counts_by_the_latest() -> None:
    tracks = advance({}, [start(9), start(5), done(30, 0)], {})
    assert tracks["sig"].p0 == (9,)
    assert decide(tracks, KEY)[1] == [Removal("sig", (9,), None)]  # an empty table: every row removed


def test_the_condition_decides_what_is_removed() -> None:
    tracks = advance({}, [start(1), done(9, 1, "id > 10")], {"sig": 1})
    assert decide(tracks, KEY)[1] == [Removal("sig", (1,), Compare("id", ">", 10))]
    tracks = advance({}, [start(1), done(9, 1, "status = 'x'")], {"sig": 1})
    decided, removals = decide(tracks, KEY)
    assert removals == [] and decided["sig"].decided == (
        "no removal: status is not a key column: a row that stopped matching may still exist"
    )
    long = " OR ".join(f"id = {i}" for i in range(400))
    tracks = advance({}, [start(1), done(9, 1, long)], {"sig": 1})
    assert decide(tracks, KEY)[1] == []
    assert report(decide(tracks, KEY)[0])["sig"] == "no removal: its condition was too long to record"


def test_rows_of_a_snapshot_without_the_rows_of_the_engine_are_not_tracked() -> None:
    assert mark_of("x-open", {"signal": "sig"}, (1,)) is None
    assert mark_of("x-start", {}, (1,)) is None
    assert SnapshotTrack.from_json(
        "s", SnapshotTrack("s", (1, 2), 3, 2, "id > 1").to_json()
    ) == SnapshotTrack("s", (1, 2), 3, 2, "id > 1")


def test_a_stopped_snapshot_leaves_the_waiting_list_and_removes_nothing() -> None:
    from cdc_backfill.signals.marks import ended_data

    ended = mark_of("c-ended", json.loads(ended_data("s.t", "sig", "stopped")), (30,))
    assert ended is not None and ended.kind == "ended"
    tracks = advance({}, [start(5), ended], {"sig": 2})
    tracks, removals = decide(tracks, KEY)
    assert removals == []
    assert report(tracks) == {"sig": "no removal: the snapshot stopped before it finished"}
    tracks = advance(tracks, [done(40, 2)], {"sig": 1})  # nothing changes it once decided
    assert decide(tracks, KEY)[1] == []
