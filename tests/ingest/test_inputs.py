"""What an ingest reads, found before its Spark job (plain file reads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_backfill.landing.layout import stream_dir
from cdc_backfill.landing.stream import InputError, bytes_to_ingest, ingest_paths


def test_an_ingest_reads_what_it_is_given_else_the_landings_own_stream(tmp_path: Path) -> None:
    landing, own = tmp_path / "lake", stream_dir(tmp_path / "lake")
    assert ingest_paths(landing, None) == []  # no stream/: nothing to do, not an error
    own.mkdir(parents=True)
    assert ingest_paths(landing, None) == []  # an empty one neither
    (own / ".cdc-0001.part").write_text("{")  # nor a capture's file being written
    assert ingest_paths(landing, None) == []
    (own / "b.jsonl").write_text("{}\n")
    (own / "a.json").write_text("{}\n")
    assert ingest_paths(landing, None) == [own / "a.json", own / "b.jsonl"]
    assert ingest_paths(landing, []) == [own]  # asked for by an empty list: stream/, which must hold some
    assert ingest_paths(landing, [tmp_path / "topics"]) == [tmp_path / "topics"]


def test_the_bytes_to_ingest_are_the_event_files_sizes_summed_until_past_a_limit(tmp_path: Path) -> None:
    landing, own = tmp_path / "lake", stream_dir(tmp_path / "lake")
    assert bytes_to_ingest(landing, None) == 0
    own.mkdir(parents=True)
    (own / "a.jsonl").write_bytes(b"x" * 100)
    (own / "b.json").write_bytes(b"x" * 50)
    (own / "_partial.json").write_bytes(b"x" * 1000)  # an ingest does not read these two
    (own / "notes.txt").write_bytes(b"x" * 1000)
    assert bytes_to_ingest(landing, None) == 150
    assert bytes_to_ingest(landing, None, limit=99) == 100  # over after the first file: no more summed
    topics = tmp_path / "topics"
    topics.mkdir()
    (topics / "c.ndjson").write_bytes(b"x" * 7)
    assert bytes_to_ingest(landing, [topics]) == 7
    with pytest.raises(InputError, match="no such file or folder"):
        bytes_to_ingest(landing, [tmp_path / "topic"])
