"""The snapshot engine against a real PostgreSQL while writers run, judged by the reference rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_backfill.signals.store import SignalStore
from cdc_backfill.snapshot.engine import SnapshotEngine
from tests.support.judge import assert_consistent, overlap
from tests.support.pg import InWindow, drain, send
from tests.support.workload import Writers, seed

pytestmark = pytest.mark.pg

TABLES = ["public.orders", "public.lines", "public.words"]


@pytest.mark.parametrize("readers", [1, 2])
def test_snapshot_while_writers_run_equals_the_source(fresh_db: str, tmp_path: Path, readers: int) -> None:
    seed(fresh_db)
    landing = tmp_path / "landing"
    drain(fresh_db, landing)  # slot and publication exist before anything happens
    writers = Writers(fresh_db, seed_value=readers).start()
    try:
        send(fresh_db, *[t.replace(".", "\\.") for t in TABLES], chunk_size=97)
        hook = InWindow(fresh_db, writers=writers)  # a writer's change inside every window, on any machine
        engine = SnapshotEngine(fresh_db, landing, readers=readers, window_hook=hook)
        engine.run()
    finally:
        writers.stop()
    drain(fresh_db, landing)
    result = assert_consistent(fresh_db, landing, TABLES)
    seen = overlap(fresh_db, landing, TABLES)
    assert seen.windows == hook.paced == engine.chunks_written
    assert seen.windows_with_changes == seen.windows, "the writers changed rows inside every window"
    assert result.reads_dropped > 0, "some READ rows must have been superseded inside their windows"
    assert engine.chunks_written >= (2000 + 2000 + 14 * 60) // 97
    assert {v.status for v in SignalStore(fresh_db).list()} == {"done"}
