"""A state an earlier release wrote (version folders and a ``current`` link) is converted by the next
reconcile, which says so, and goes on from what that version consumed."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import pytest

from cdc_backfill.state.table import StateError, current_version
from tests.support.runs import ingest_and_reconcile, land_first_half
from tests.support.scripts import ENCODERS, every_rule, write_stream_file
from tests.support.state import state_frame

pytestmark = pytest.mark.spark
ENC = ENCODERS["debezium-postgresql"]


def as_earlier_release(state: Path, collection: str) -> None:
    """Turn a Delta state into the folder format: the version's files in ``v000001/``, what it consumed
    in ``_cdc_meta.json``, its carry beside them, the ``current`` link and ``_log.json``."""
    version = current_version(state, collection)
    assert version is not None
    folder = state / collection
    target = folder / "v000001"
    target.mkdir()
    for f in version.files:
        shutil.copy(f, target / Path(f).name)
    if version.carry is not None:
        shutil.copytree(version.carry, target / "_cdc_carry")
    (target / "_cdc_meta.json").write_text(json.dumps(version.meta))
    (folder / "_log.json").write_text(json.dumps([{"version": 1, **version.run}]))
    for p in folder.iterdir():
        if p.name != "v000001" and p.name != "_log.json":
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    os.symlink("v000001", folder / "current")


def test_the_next_reconcile_converts_an_earlier_state_and_goes_on(spark, tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    script = every_rule(ENC)
    landing, state = tmp_path / "landing", tmp_path / "state"
    rest = land_first_half(script, ENC, landing)
    ingest_and_reconcile(spark, landing, state, ENC)
    as_earlier_release(state, ENC.collection)
    with pytest.raises(StateError, match="earlier folder format"):  # readers name the command
        current_version(state, ENC.collection)

    write_stream_file(landing, "2.jsonl", rest)
    with caplog.at_level(logging.INFO, logger="cdc_backfill"):
        ingest_and_reconcile(spark, landing, state, ENC)
    assert "converted the state from v000001 of the earlier folder format to a Delta table" in caplog.text
    got = {
        r["id"]: {"id": r["id"], "v": r["v"], "big": r["big"]}
        for r in state_frame(spark, state, ENC.collection).collect()
    }
    assert got == script.truth
    assert not (state / ENC.collection / "current").exists()
