"""kill -9 of the reconcile once its files are written and before its commit, on local disk and on the
S3 server: the state stays the version it was, the written files are named by no version, and the
run made again commits the state the source holds, each row once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cdc_backfill.faults import RECONCILE_CRASH_ENV
from cdc_backfill.ingest.column_sources import ColumnSources
from cdc_backfill.ingest.spark.job import ingest_landing
from cdc_backfill.state.table import StateTable, current_version
from tests.support.runs import ingest_and_reconcile, land_snapshot_of
from tests.support.s3 import upload
from tests.support.scripts import ENCODERS, records, write_stream_file
from tests.support.state import state_table

pytestmark = [pytest.mark.spark, pytest.mark.slow]
ENC = ENCODERS["debezium-postgresql"]


def reconcile(landing: Any, state: Any, crash: str | None = None) -> subprocess.CompletedProcess[str]:
    """``cdc-backfill reconcile`` as a user types it, in its own process and Spark session."""
    env = {**os.environ, **({RECONCILE_CRASH_ENV: crash} if crash else {})}
    return subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "reconcile", "--landing", str(landing), "--state", str(state),
         "--signal-table", ENC.signal, "--master", "local[2]"],
        capture_output=True, text=True, timeout=900, env=env,
    )  # fmt: skip


@pytest.mark.parametrize("lake", ["local", "s3"], indirect=True)
def test_a_reconcile_killed_before_its_commit_loses_and_doubles_nothing(spark, lake, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    first = tmp_path / "first"
    s = land_snapshot_of(100, ENC, first)
    landing, state = lake / "landing", lake / "state"
    upload(first, landing)
    assert ingest_and_reconcile(spark, landing, state, ENC)["rows"] == 100  # version 0
    done = len(s.changes)
    s.update(7, "changed")
    s.delete(8)
    s.insert(500, "new")
    later = tmp_path / "later"
    write_stream_file(later, "2.jsonl", [r for n, r in records(s, ENC) if n > done])
    upload(later, landing)
    ingest_landing(spark, landing, None, ColumnSources(landing, ENC.signal))

    killed = reconcile(landing, state, crash="before-commit")
    assert killed.returncode != 0, killed.stderr[-2000:]
    table = StateTable(state, ENC.collection)
    current = current_version(state, ENC.collection)
    assert current is not None and current.version == 0  # nothing of the killed run is a version
    written = sorted(p.name for p in table.path.iterdir() if p.name.startswith("v000001-"))
    assert written, "the killed run had written its files"  # unnamed: every reader goes through the log
    assert len(state_table(state, ENC.collection)) == 100

    again = reconcile(landing, state)
    assert again.returncode == 0, again.stderr[-3000:]
    got = state_table(state, ENC.collection).to_pylist()
    assert len(got) == len({r["id"] for r in got})  # each row once
    assert {r["id"]: (r["v"], r["big"]) for r in got} == {k: (r["v"], r["big"]) for k, r in s.truth.items()}
    assert current_version(state, ENC.collection).version == 1  # type: ignore[union-attr]
    # the killed run's files stay unnamed until the table's retention has passed; vacuum then removes
    # them (StateTable.vacuum keeps delta.deletedFileRetentionDuration): listed, not yet removed
    assert all(f.split("/")[-2] not in written for f in current_version(state, ENC.collection).files)  # type: ignore[union-attr]
