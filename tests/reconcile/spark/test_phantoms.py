"""docs/design.md §6 rule 7 on hand-made streams: a finished snapshot removes the state's rows it did not
read and nothing touched after its start; a snapshot not finished, one whose condition reads a non-key
column, and rows changed after the start are left alone; a key condition limits the removal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdc_backfill.ingest.column_sources import ColumnSources
from cdc_backfill.ingest.spark.job import ingest_landing
from cdc_backfill.reconcile.spark.job import reconcile_landing
from tests.support.scripts import ENCODERS, Encoder, Script, phantoms, records, write_chunk, write_stream_file
from tests.support.state import state_frame

pytestmark = pytest.mark.spark


def run(spark, landing: Path, state: Path, enc: Encoder) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    ingest_landing(spark, landing, None, ColumnSources(landing, enc.signal))
    return reconcile_landing(spark, landing, state, [enc.collection], enc.signal)["collections"][
        enc.collection
    ]


def land(
    script: Script, enc: Encoder, landing: Path, upto: int | None = None, chunks: tuple[str, ...] = ()
) -> None:
    recs = [r for n, r in records(script, enc) if upto is None or n <= upto]
    write_stream_file(landing, f"upto-{upto}.jsonl", recs)
    for chunk in chunks or tuple(script.reads):
        write_chunk(landing, enc.collection, chunk, script.reads[chunk])


def keys(spark, state: Path, enc: Encoder) -> dict[int, str]:  # type: ignore[no-untyped-def]
    return {r["id"]: r["v"] for r in state_frame(spark, state, enc.collection).collect()}


@pytest.mark.parametrize("fmt", ["debezium-postgresql", "dataworks"])
def test_a_finished_snapshot_removes_the_rows_it_did_not_read(spark, tmp_path: Path, fmt: str) -> None:  # type: ignore[no-untyped-def]
    enc = ENCODERS[fmt]
    s = phantoms(enc)
    land(s, enc, tmp_path / "landing")
    info = run(spark, tmp_path / "landing", tmp_path / "state", enc)
    assert keys(spark, tmp_path / "state", enc) == {k: r["v"] for k, r in s.truth.items()}
    assert info["phantoms_removed"] == 2  # 5 and 20; 9 and 2 came after the start, 7 was read
    assert info["snapshots"] == {
        "first": "waiting: not finished: 1 chunk(s) applied, no done row in the stream yet",
        "second": "rows before its start removed",
    }


def test_no_removal_until_the_snapshot_is_finished_and_every_chunk_applied(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    enc = ENCODERS["debezium-postgresql"]
    landing, state = tmp_path / "landing", tmp_path / "state"
    stopped = phantoms(enc, finished=False)
    land(stopped, enc, landing)
    info = run(spark, landing, state, enc)
    assert info["phantoms_removed"] == 0 and {5, 20} <= keys(spark, state, enc).keys()
    assert (
        info["snapshots"]["second"]
        == "waiting: not finished: 2 chunk(s) applied, no done row in the stream yet"
    )

    # the whole stream, but the second chunk lands late: nothing is removed until it is applied
    s = phantoms(enc)
    landing, state = tmp_path / "late", tmp_path / "late-state"
    land(s, enc, landing, chunks=("old", "s1"))
    info = run(spark, landing, state, enc)
    assert info["phantoms_removed"] == 0 and info["snapshots"]["second"] == "waiting: 1 of 2 chunk(s) applied"
    land(s, enc, landing, upto=0, chunks=("s2",))
    info = run(spark, landing, state, enc)
    assert info["phantoms_removed"] == 2 and info["snapshots"]["second"] == "rows before its start removed"
    assert keys(spark, state, enc) == {k: r["v"] for k, r in s.truth.items()}
    assert "second" not in run(spark, landing, state, enc).get("snapshots", {})  # decided once


def test_a_key_condition_limits_the_removal_and_any_other_condition_prevents_it(
    spark, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    enc = ENCODERS["debezium-postgresql"]
    s = phantoms(enc, condition="id <= 10")
    land(s, enc, tmp_path / "key")
    info = run(spark, tmp_path / "key", tmp_path / "key-state", enc)
    assert info["phantoms_removed"] == 1  # 5; 20 is outside the condition
    assert keys(spark, tmp_path / "key-state", enc).keys() == s.truth.keys() | {20}
    assert info["snapshots"]["second"] == "rows before its start that its condition selects removed"

    s = phantoms(enc, condition="v <> 'x' AND id <= 10")
    land(s, enc, tmp_path / "value")
    info = run(spark, tmp_path / "value", tmp_path / "value-state", enc)
    assert info["phantoms_removed"] == 0
    assert info["snapshots"]["second"] == (
        "no removal: v is not a key column: a row that stopped matching may still exist"
    )


@pytest.mark.parametrize("fmt", ["debezium-postgresql", "debezium-oracle"])
def test_incremental_runs_with_a_finished_snapshot_equal_one_full_run(
    spark, tmp_path: Path, fmt: str
) -> None:  # type: ignore[no-untyped-def]
    """The stream in three parts, each chunk landing in another run (one after its done row): the
    phantoms go in the run that applies the last chunk, and the state equals one full run's."""
    enc = ENCODERS[fmt]
    s = phantoms(enc)
    recs = records(s, enc)
    landing, state = tmp_path / "landing", tmp_path / "state"
    third = len(recs) // 3
    lands = {"old": 0, "s1": 2, "s2": 1}
    removed = []
    for i, part in enumerate((recs[:third], recs[third : 2 * third], recs[2 * third :])):
        write_stream_file(landing, f"part-{i}.jsonl", [r for _, r in part])
        for chunk in [c for c, when in lands.items() if when == i]:
            write_chunk(landing, enc.collection, chunk, s.reads[chunk])
        removed.append(run(spark, landing, state, enc)["phantoms_removed"])
    assert removed == [0, 0, 2]
    full = tmp_path / "full"
    assert run(spark, landing, full, enc)["phantoms_removed"] == 2
    assert keys(spark, state, enc) == keys(spark, full, enc) == {k: r["v"] for k, r in s.truth.items()}


def test_a_snapshot_by_debezium_removes_nothing_and_says_why(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    enc = ENCODERS["debezium-postgresql"]
    s = Script()
    s.insert(1, "streamed")
    s.insert(2, "streamed")
    s.lose_delete(2)
    s.debezium_read(1)  # Debezium's READs are stream events; no start or done row tells when it finished
    write_stream_file(tmp_path / "landing", "1.jsonl", [r for _, r in records(s, enc)])
    write_chunk(tmp_path / "landing", enc.collection, "none", [])
    info = run(spark, tmp_path / "landing", tmp_path / "state", enc)
    assert info["phantoms_removed"] == 0 and keys(spark, tmp_path / "state", enc).keys() == {1, 2}
    assert info["snapshots"] == {
        "debezium": "no removal: the landing does not tell when the snapshot that sent READ events in the "
        "stream completed"
    }
