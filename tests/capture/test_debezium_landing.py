"""What capture debezium lands: batch files whole, in delivery order, read back by ingest's parser."""

from __future__ import annotations

import json
from pathlib import Path

from cdc_backfill.capture.debezium_landing import batch_file_name, land_batch, next_offset
from cdc_backfill.events.debezium import delivery_offset
from cdc_backfill.layout import ingested_stream_dir


def test_batches_continue_their_offsets_across_restarts_and_ingest_moves(tmp_path: Path) -> None:
    assert next_offset(tmp_path) == 0
    first = land_batch(tmp_path, [('{"id": 1}', '{"payload": {"op": "c"}}'), ('{"id": 1}', None)], 0)
    assert first is not None and first.name == batch_file_name(0, 1)
    lines = [json.loads(line) for line in first.read_text().splitlines()]
    assert [delivery_offset(r) for r in lines] == [(0, 0), (0, 1)]
    assert lines[1]["value"] is None and lines[0]["key"] == {"id": 1}
    assert next_offset(tmp_path) == 2
    moved = ingested_stream_dir(tmp_path) / first.name
    moved.parent.mkdir(parents=True)
    first.rename(moved)  # what ingest does with a file it has put into the log
    assert next_offset(tmp_path) == 2
    assert land_batch(tmp_path, [], 2) is None
    assert not list(tmp_path.rglob(".*.part"))


def test_snapshot_outcomes_keep_a_stopped_snapshot_aborted() -> None:
    from cdc_backfill.capture.debezium_landing import snapshot_outcomes

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
