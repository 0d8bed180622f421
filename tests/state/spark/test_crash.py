"""A run that dies between writing its Parquet files and committing them: the previous version stays
current and readable, no reader sees the dead run's files, and the next run is correct."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_backfill.state.table import StateTable, current_version
from tests.support.runs import ingest_and_reconcile, land_first_half
from tests.support.scripts import ENCODERS, every_rule, write_stream_file
from tests.support.state import state_frame

pytestmark = pytest.mark.spark
ENC = ENCODERS["debezium-postgresql"]


class Crash(BaseException):
    """As a process killed there: nothing after it runs (not an Exception: nothing catches it)."""


def test_a_crash_before_the_commit_leaves_the_previous_version_and_the_next_run_correct(
    spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    script = every_rule(ENC)
    landing, state = tmp_path / "landing", tmp_path / "state"
    rest = land_first_half(script, ENC, landing)
    ingest_and_reconcile(spark, landing, state, ENC)
    before = current_version(state, ENC.collection)
    assert before is not None
    seen = sorted(tuple(r) for r in state_frame(spark, state, ENC.collection).collect())

    write_stream_file(landing, "2.jsonl", rest)
    real_commit = StateTable.commit

    def crash(self, files_dir, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert any(Path(files_dir).glob("*.parquet"))  # the run's files are written: die before naming them
        raise Crash()

    monkeypatch.setattr(StateTable, "commit", crash)
    with pytest.raises(Crash):
        ingest_and_reconcile(spark, landing, state, ENC)
    after = current_version(state, ENC.collection)
    assert after is not None and after.version == before.version and after.files == before.files
    assert sorted(tuple(r) for r in state_frame(spark, state, ENC.collection).collect()) == seen
    written = {str(p) for p in (state / ENC.collection).glob("v*/*.parquet")}
    assert written - set(before.files), "the dead run's files are on disk, named by no version"

    monkeypatch.setattr(StateTable, "commit", real_commit)
    ingest_and_reconcile(spark, landing, state, ENC)
    got = {
        r["id"]: {"id": r["id"], "v": r["v"], "big": r["big"]}
        for r in state_frame(spark, state, ENC.collection).collect()
    }
    assert got == script.truth
