"""What capture debezium lands: batch files whole, in delivery order, read back by ingest's parser."""

from __future__ import annotations

import json
from pathlib import Path

from cdc_backfill.capture.debezium.batch_files import land_batch, last_batch, next_offset
from cdc_backfill.events.debezium import delivery_offset
from cdc_backfill.landing.layout import batch_file_name, ingested_stream_dir


def test_batches_continue_their_offsets_across_restarts_and_ingest_moves(tmp_path: Path) -> None:
    assert next_offset(tmp_path) == 0 and last_batch(tmp_path) is None
    first, _ = land_batch(tmp_path, [('{"id": 1}', '{"payload": {"op": "c"}}'), ('{"id": 1}', None)], 0)
    assert first is not None and first.name == batch_file_name(0, 1)
    lines = [json.loads(line) for line in first.read_text().splitlines()]
    assert [delivery_offset(r) for r in lines] == [(0, 0), (0, 1)]
    assert lines[1]["value"] is None and lines[0]["key"] == {"id": 1}
    assert next_offset(tmp_path) == 2
    moved = ingested_stream_dir(tmp_path) / first.name
    moved.parent.mkdir(parents=True)
    first.rename(moved)  # what ingest does with a file it has put into the log
    assert next_offset(tmp_path) == 2
    # what a notification sent again after a restart, in a batch of records landed before, is landed with
    assert last_batch(tmp_path) == (1, moved)
    assert land_batch(tmp_path, [], 2) == (None, b"")
    assert not list(tmp_path.rglob(".*.part"))


def test_snapshot_outcomes_keep_a_stopped_snapshot_aborted() -> None:
    from cdc_backfill.landing.notifications import snapshot_outcomes

    def n(i: str, t: str) -> dict:
        return {"id": i, "type": t}

    # Debezium 3.6, stop-snapshot: COMPLETED under the signal's id, then ABORTED under its own
    stopped = [
        n("a", "STARTED"),
        n("a", "PAUSED"),
        n("a", "RESUMED"),
        n("a", "COMPLETED"),
        n("x1", "ABORTED"),
    ]
    assert snapshot_outcomes(stopped) == {"a": "ABORTED"}
    assert snapshot_outcomes([n("a", "STARTED"), n("x1", "ABORTED"), n("a", "COMPLETED")]) == {"a": "ABORTED"}
    done = [
        n("a", "STARTED"),
        n("a", "IN_PROGRESS"),
        n("a", "COMPLETED"),
        n("b", "STARTED"),
        n("b", "COMPLETED"),
    ]
    assert snapshot_outcomes(done) == {"a": "COMPLETED", "b": "COMPLETED"}


def _sink_line(offset: int, value: dict, wrapped: bool = True) -> str:
    """A record as a Kafka sink writes it: partition, offset, key and value (here schema-wrapped)."""
    if wrapped:
        value = {
            "schema": {"type": "struct", "name": "io.debezium.connector.common.Notification"},
            "payload": value,
        }
    return json.dumps({"partition": 0, "offset": offset, "key": None, "value": value})


def _note(sid: str, kind: str) -> dict:
    return {"id": sid, "aggregate_type": "Incremental Snapshot", "type": kind, "additional_data": {},
            "timestamp": "1700000000000"}  # fmt: skip


def test_a_sinks_notifications_are_read_where_it_landed_them(tmp_path: Path) -> None:
    """Kafka Connect or Debezium Server writing the notification topic into the landing's stream folder:
    the snapshot's end is read there, waiting or already ingested, wrapped or not; other lines are not
    notifications, and this project's own batch files are not searched."""
    from cdc_backfill.landing.layout import stream_dir
    from cdc_backfill.landing.notifications import ended_snapshots, notifications_in

    change = {
        "op": "r",
        "after": {"id": 1},
        "source": {"connector": "postgresql", "table": "t", "schema": "public"},
    }
    lines = [_sink_line(0, _note("s1", "STARTED")), json.dumps({"offset": 1, "value": change}),
             _sink_line(2, _note("s1", "TABLE_SCAN_COMPLETED"), wrapped=False), "not json Incremental Snapshot"]  # fmt: skip
    assert [n["type"] for n in notifications_in("\n".join(lines).encode())] == [
        "STARTED",
        "TABLE_SCAN_COMPLETED",
    ]
    assert notifications_in(json.dumps({"value": change}).encode()) == []

    stream_dir(tmp_path).mkdir(parents=True)
    (stream_dir(tmp_path) / "notifications-0001.json").write_text("\n".join(lines) + "\n")
    assert ended_snapshots(tmp_path) == {}
    with (stream_dir(tmp_path) / "notifications-0001.json").open("a") as fh:  # the sink appends
        fh.write(_sink_line(3, _note("s1", "COMPLETED")) + "\n")
    assert ended_snapshots(tmp_path) == {"s1": "COMPLETED"}
    ingested_stream_dir(tmp_path).mkdir(parents=True)
    (ingested_stream_dir(tmp_path) / "notifications-0000.json").write_text(
        "\n".join(_sink_line(i, _note("s0", k)) for i, k in enumerate(("STARTED", "COMPLETED"))) + "\n"
    )
    (stream_dir(tmp_path) / batch_file_name(0, 0)).write_text(_sink_line(0, _note("s9", "COMPLETED")) + "\n")
    assert ended_snapshots(tmp_path) == {"s0": "COMPLETED", "s1": "COMPLETED"}


def test_a_sinks_file_being_written_or_renamed_away_is_not_an_error(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A sink writing a file under a hidden name, then renaming it, while the trigger polls: the hidden
    file is left out (as ingest leaves it), and a file gone between the listing and its reading is read
    where it is at the next poll (a race that failed a DAG's wait for the stream)."""
    from cdc_backfill.landing.layout import stream_dir
    from cdc_backfill.landing.notifications import ended_snapshots

    stream_dir(tmp_path).mkdir(parents=True)
    line = _sink_line(0, _note("s1", "COMPLETED")) + "\n"
    (stream_dir(tmp_path) / ".dbz-00000000000000000765-00000000000000000956.jsonl.925fa399.part").write_text(
        line
    )
    assert ended_snapshots(tmp_path) == {}
    gone = stream_dir(tmp_path) / "notifications-0002.json"
    gone.write_text(line)
    real_stat = Path.stat

    def renamed_meanwhile(self: Path, **kw):  # type: ignore[no-untyped-def]
        if self == gone:
            raise FileNotFoundError(2, "No such file or directory", str(self))
        return real_stat(self, **kw)

    monkeypatch.setattr(Path, "stat", renamed_meanwhile)
    assert ended_snapshots(tmp_path) == {}
    monkeypatch.undo()
    assert ended_snapshots(tmp_path) == {"s1": "COMPLETED"}


def test_a_sinks_notifications_on_s3(s3_lake) -> None:  # type: ignore[no-untyped-def]
    """A sink (S3 sink connector, Debezium Server) writing objects into an S3 landing: read once each."""
    from cdc_backfill.landing.layout import stream_dir
    from cdc_backfill.landing.notifications import ended_snapshots

    folder = stream_dir(s3_lake)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notifications+0+0000000000.json").write_bytes(
        (
            "\n".join(_sink_line(i, _note("s1", k)) for i, k in enumerate(("STARTED", "COMPLETED"))) + "\n"
        ).encode()
    )
    (folder / "changes+0+0000000000.json").write_bytes(b'{"offset":0,"value":{"op":"r","after":{"id":1}}}\n')
    assert ended_snapshots(s3_lake) == {"s1": "COMPLETED"}
    assert ended_snapshots(s3_lake) == {"s1": "COMPLETED"}  # from what was read the first time
