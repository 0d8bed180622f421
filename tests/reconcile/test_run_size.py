"""The rows a reconcile run reads, counted before its Spark job (pure, no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdc_backfill.events.positions import position_key
from cdc_backfill.landing.layout import rolls_dir, snapshot_dir, stream_dir
from cdc_backfill.reconcile import run_size
from cdc_backfill.reconcile.run_size import (
    JSON_EVENT_BYTES,
    SMALL_RUN_ROWS,
    first_compiler_only,
    first_compiler_only_to_ingest,
    rows_to_read,
    small_run,
)
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE
from tests.support.state import write_state

ORDERS, TAGS = "public.orders", "public.tags"


def _manifest(landing: Path, last: tuple[int, ...], events: int) -> None:
    rolls = rolls_dir(landing)
    rolls.mkdir(parents=True, exist_ok=True)
    doc = {"files": [f"{ORDERS}/v0001/x{last[0]}.parquet"], "position": list(last), "events": events}
    (rolls / f"r{position_key(last).hex()}.json").write_text(json.dumps(doc))


def _chunk(landing: Path, collection: str, name: str, rows: int) -> None:
    folder = snapshot_dir(landing, collection)
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": list(range(rows))}), folder / f"{name}.parquet")


def test_a_run_counts_new_events_once_and_each_collections_state_and_read_rows(tmp_path: Path) -> None:
    landing, state = tmp_path / "landing", tmp_path / "state"
    assert rows_to_read(landing, state, [ORDERS]) == 0  # nothing landed yet: the smallest run
    _manifest(landing, (1, 5), 700)  # a manifest's events are every collection's
    _manifest(landing, (1, 9), 300)
    _chunk(landing, ORDERS, "c1", 40)
    _chunk(landing, TAGS, "c2", 2)
    assert rows_to_read(landing, state, [ORDERS, TAGS]) == 1000 + 40 + 2
    write_state(state, TAGS, [{"id": i} for i in range(25)])  # read at (1, 2): every manifest is new to it
    assert rows_to_read(landing, state, [ORDERS, TAGS]) == 1000 + 40 + 2 + 25
    assert rows_to_read(landing, state, [TAGS]) == 1000 + 2 + 25


def test_counting_stops_past_the_limit_before_reading_every_footer(tmp_path: Path) -> None:
    landing, state = tmp_path / "landing", tmp_path / "state"
    _manifest(landing, (1, 5), 100)
    for i in range(70):  # more than one batch of footers
        _chunk(landing, ORDERS, f"c{i:03d}", 10)
    assert rows_to_read(landing, state, [ORDERS]) == 100 + 700
    assert rows_to_read(landing, state, [ORDERS], limit=150) == 100 + 640  # the first 64 footers, then over
    assert rows_to_read(landing, state, [ORDERS], limit=50) == 100  # over on the events alone: no footer read


def test_small_runs_are_those_known_to_be_at_most_the_limit() -> None:
    assert small_run(0) and small_run(SMALL_RUN_ROWS)
    assert not small_run(SMALL_RUN_ROWS + 1)
    assert not small_run(None)  # not known: the default compilers


def test_a_job_that_ingests_json_first_counts_it_by_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    landing, state = tmp_path / "landing", tmp_path / "state"
    own = stream_dir(landing)
    own.mkdir(parents=True)
    (own / "a.jsonl").write_bytes(b"x" * 1000)
    _manifest(landing, (1, 5), 100)
    assert first_compiler_only(landing, state, [ORDERS], DEFAULT_SIGNAL_TABLE, ingest=True)
    monkeypatch.setattr(run_size, "SMALL_RUN_ROWS", 100 + 1000 // JSON_EVENT_BYTES)
    assert first_compiler_only(
        landing, state, [ORDERS], DEFAULT_SIGNAL_TABLE, ingest=True
    )  # its JSON as events: at the limit
    monkeypatch.setattr(run_size, "SMALL_RUN_ROWS", 100 + 1000 // JSON_EVENT_BYTES - 1)
    assert not first_compiler_only(landing, state, [ORDERS], DEFAULT_SIGNAL_TABLE, ingest=True)
    assert first_compiler_only(
        landing, state, [ORDERS], DEFAULT_SIGNAL_TABLE
    )  # a job that does not ingest does not count it
    monkeypatch.setattr(run_size, "SMALL_INGEST_BYTES", 999)
    monkeypatch.setattr(run_size, "SMALL_RUN_ROWS", SMALL_RUN_ROWS)
    assert not first_compiler_only(
        landing, state, [ORDERS], DEFAULT_SIGNAL_TABLE, ingest=True
    )  # more JSON than a small job's


def test_an_ingest_is_small_by_the_bytes_of_its_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    landing = tmp_path / "landing"
    assert first_compiler_only_to_ingest(landing, None)  # nothing to ingest
    own = stream_dir(landing)
    own.mkdir(parents=True)
    (own / "a.jsonl").write_bytes(b"x" * 1000)
    assert first_compiler_only_to_ingest(landing, None)
    assert first_compiler_only_to_ingest(landing, [own / "a.jsonl"])
    monkeypatch.setattr(run_size, "SMALL_INGEST_BYTES", 999)
    assert not first_compiler_only_to_ingest(landing, None)
    assert not first_compiler_only_to_ingest(landing, [tmp_path / "typo"])  # not counted: both compilers
