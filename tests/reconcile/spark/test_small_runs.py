"""A small run rewrites only the state's files that hold the keys it changes; the others stay as they
are, and the state still equals the truth and one full run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cdc_backfill.state.table import current_version
from tests.support.runs import ingest_and_reconcile
from tests.support.scripts import ENCODERS, Script, records, write_chunk, write_stream_file
from tests.support.state import state_frame

pytestmark = pytest.mark.spark
ENC = ENCODERS["debezium-postgresql"]


@pytest.fixture
def many_files(spark) -> Iterator[None]:  # type: ignore[no-untyped-def]
    """States of several files even when small: adaptive execution would write a small one as one."""
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    try:
        yield
    finally:
        spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")


def run(spark, landing: Path, state: Path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return ingest_and_reconcile(spark, landing, state, ENC)


def rows(spark, state: Path) -> dict[int, tuple[Any, ...]]:  # type: ignore[no-untyped-def]
    return {r["id"]: (r["v"], r["big"]) for r in state_frame(spark, state, ENC.collection).collect()}


def test_a_small_run_rewrites_only_the_files_holding_its_keys(spark, many_files, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    s = Script()
    s.seed(*range(1, 201))
    s.open("c1")
    s.read("c1", *range(1, 201))  # a snapshot's chunk: it gives the columns, and is judged in the first run
    s.close("c1")
    landing, state = tmp_path / "landing", tmp_path / "state"
    write_stream_file(landing, "1.jsonl", [r for _, r in records(s, ENC)])
    write_chunk(landing, ENC.collection, "c1", s.reads["c1"])
    assert run(spark, landing, state)["rows"] == 200
    first = current_version(state, ENC.collection)
    assert first is not None and len(first.files) > 2, first.files

    done = len(s.changes)
    s.update(7, "changed")
    s.change_key(9, 1009)  # the old key's file and the new key's
    s.update(11, "toast", toast=True)  # the unchanged TOAST value comes from the file it is in
    s.insert(5000, "new")
    write_stream_file(landing, "2.jsonl", [r for n, r in records(s, ENC) if n > done])
    info = run(spark, landing, state)
    second = current_version(state, ENC.collection)
    assert second is not None
    kept = set(first.files) & set(second.files)
    assert kept and 0 < len(first.files) - len(kept) <= 3, (first.files, second.files)  # keys 7, 9, 11
    assert info["rows"] == 201 == sum(second.file_rows)
    assert rows(spark, state) == {k: (r["v"], r["big"]) for k, r in s.truth.items()}

    full = tmp_path / "full"
    run(spark, landing, full)
    assert rows(spark, full) == rows(spark, state)
