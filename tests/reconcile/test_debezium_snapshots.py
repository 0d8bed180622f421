"""The phantom rule's marks for snapshots Debezium runs: the signal row starts them, a finished table
scan landed and applied finishes them, a stop never does."""

from __future__ import annotations

import json

from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.debezium_snapshots import notification_marks, same_table, start_marks, unfinished
from cdc_backfill.reconcile.phantoms import advance, decide

ID = [PgColumn("id", "integer", 23, nullable=False)]


def execute(sid: str, *collections: str, **extra: object) -> tuple[str, str, str, tuple[int, ...]]:
    return (
        sid,
        "execute-snapshot",
        json.dumps({"data-collections": list(collections), "type": "incremental", **extra}),
        (0, 10),
    )


def scanned(sid: str, table: str, applied: bool = True, status: str = "SUCCEEDED") -> dict:
    return {"id": sid, "type": "TABLE_SCAN_COMPLETED", "applied": applied,
            "additional_data": {"scanned_collection": table, "status": status}}  # fmt: skip


def test_the_signal_row_starts_the_snapshots_of_the_collections_it_names() -> None:
    rows = [
        execute("s1", "public\\.orders"),
        execute("s2", "public\\.lines"),
        execute(
            "s3",
            "public\\..*",
            **{"additional-conditions": [{"data-collection": "public\\.orders", "filter": "id > 5"}]},
        ),
        (
            "s4",
            "stop-snapshot",
            json.dumps({"data-collections": ["public\\.orders"], "type": "incremental"}),
            (0, 11),
        ),
        ("bad", "execute-snapshot", "{not json", (0, 12)),
    ]
    marks = start_marks(rows, "public.orders")
    assert [(m.kind, m.signal, m.position) for m in marks] == [
        ("start", "s1", (0, 10)),
        ("start", "s3", (0, 10)),
    ]
    assert marks[1].data["additional-condition"] == "id > 5"


def test_a_finished_scan_counts_once_the_stream_landed_with_it_is_applied() -> None:
    notes = [scanned("s1", "public.orders"), scanned("s1", "public.lines")]
    [done] = notification_marks(notes, "public.orders", (0, 40))
    assert (done.kind, done.signal, done.position) == ("done", "s1", (0, 40))
    # the batch landed with it not in the log yet; a scan that did not reach the table's end; no state
    assert notification_marks([scanned("s1", "public.orders", applied=False)], "public.orders", (0, 40)) == []
    assert (
        notification_marks([scanned("s1", "public.orders", status="SQL_EXCEPTION")], "public.orders", (0, 9))
        == []
    )
    assert notification_marks(notes, "public.orders", None) == []


def test_a_stopped_snapshot_ends_without_removal_though_debezium_says_completed() -> None:
    # Debezium 3.6 on a stop of the table it reads: COMPLETED under the signal's id, ABORTED under its own
    notes = [
        {"id": "s1", "type": "STARTED", "applied": True},
        {"id": "s1", "type": "COMPLETED", "applied": True},
        {"id": "f00", "type": "ABORTED", "applied": True},
    ]
    tracks = advance({}, start_marks([execute("s1", "public\\.orders")], "public.orders")
                     + notification_marks(notes, "public.orders", (0, 99)), {})  # fmt: skip
    tracks, removals = decide(tracks, ID)
    assert removals == [] and tracks["s1"].decided == "no removal: the snapshot stopped before it finished"


def test_a_finished_snapshot_removes_before_its_signal_row_with_its_key_condition() -> None:
    marks = start_marks(
        [execute("s3", "public\\.orders", **{"additional-condition": "id > 5"})], "public.orders"
    )
    marks += notification_marks([scanned("s3", "public.orders")], "public.orders", (0, 60))
    tracks, removals = decide(advance({}, marks, {}), ID)
    [r] = removals
    assert r.p0 == (0, 10) and r.condition is not None
    assert tracks["s3"].decided == "rows before its start that its condition selects removed"


def test_debeziums_table_names_are_the_collections_unquoted() -> None:
    assert same_table("public.orders", "public.orders")
    assert same_table("my.schema.t", '"my.schema"."t"')
    assert not same_table("public.order", "public.orders")


def test_a_snapshot_started_and_never_ended_is_said_waiting_with_what_to_do() -> None:
    notes = [
        {"id": "s1", "type": "STARTED"}, {"id": "s1", "type": "COMPLETED"},
        {"id": "s2", "type": "STARTED"}, {"id": "s2", "type": "TABLE_SCAN_COMPLETED"},
        {"id": "s3", "type": "STARTED"}, {"id": "s3", "type": "COMPLETED"}, {"id": "x", "type": "ABORTED"},
    ]  # fmt: skip
    waiting = unfinished(notes)
    assert list(waiting) == ["s2"], waiting  # s1 completed, s3 stopped: both ended
    assert (
        waiting["s2"].startswith("waiting: Debezium said STARTED") and "new execute-snapshot" in waiting["s2"]
    )
    assert unfinished([]) == {}
