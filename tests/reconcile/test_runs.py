"""What a reconcile run starts from, and the landing zones it refuses (pure, no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

from cdc_backfill.reconcile.runs import RunMeta, ingest_hint, stream_files, unmoved_json_reason


def test_a_landing_with_json_stream_files_is_refused_with_the_ingest_command(tmp_path: Path) -> None:
    landing = tmp_path / "my lake"
    assert unmoved_json_reason(landing) is None  # no stream folder at all
    (landing / "stream" / "topic").mkdir(parents=True)
    (landing / "stream" / ".cdc-1.jsonl.part").write_text("")  # a writer's unfinished file
    (landing / "stream" / "notes.txt").write_text("")
    assert unmoved_json_reason(landing) is None
    (landing / "stream" / "a.jsonl").write_text("{}\n")
    (landing / "stream" / "topic" / "b.json").write_text("{}\n")
    assert stream_files(landing) == ["a.jsonl", "topic/b.json"]
    reason = unmoved_json_reason(landing)
    assert reason is not None and "holds 2 JSON stream file(s)" in reason
    assert f"`cdc-backfill ingest --landing '{landing}'`" in reason  # quoted: the folder has a space
    assert ingest_hint(Path("lake")) == "cdc-backfill ingest --landing lake"


def test_a_state_written_by_a_release_that_read_json_still_plans() -> None:
    doc = {"files": ["cdc-1.jsonl"], "judged_chunks": ["c1"], "position": [5, 6]}
    meta = RunMeta.from_json(doc)
    assert meta == RunMeta(frozenset({"c1"}), (5, 6))
    assert json.loads(json.dumps(meta.to_json())) == {"judged_chunks": ["c1"], "position": [5, 6]}
