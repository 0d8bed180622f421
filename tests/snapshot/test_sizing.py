"""How the engine sizes chunks when the signal named no chunk size."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdc_backfill.landing.layout import snapshot_dir
from cdc_backfill.snapshot import sizing
from cdc_backfill.snapshot.engine import SnapshotEngine
from cdc_backfill.snapshot.sizing import ADAPTIVE_MAX_BYTES, ADAPTIVE_MAX_ROWS, next_chunk_size
from tests.support.judge import assert_consistent
from tests.support.pg import drain, send
from tests.support.workload import Writers, seed


def test_a_chunk_that_read_fast_doubles_the_next_up_to_the_bounds() -> None:
    assert next_chunk_size(4096, 4096, 4096, 400_000, 0.05) == 8192
    assert next_chunk_size(ADAPTIVE_MAX_ROWS, 4096, ADAPTIVE_MAX_ROWS, 1 << 20, 0.05) == ADAPTIVE_MAX_ROWS
    # wide rows: the byte bound stops the growth before the row bound
    assert next_chunk_size(8192, 4096, 8192, ADAPTIVE_MAX_BYTES // 2 + 1, 0.05) == 8192
    # a short chunk (a range's end) says nothing of the speed
    assert next_chunk_size(8192, 4096, 100, 10_000, 0.01) == 8192


def test_a_window_held_open_long_halves_the_next_but_never_below_the_start() -> None:
    assert next_chunk_size(32768, 4096, 32768, 1 << 20, 0.8) == 32768  # neither fast nor slow
    assert next_chunk_size(32768, 4096, 32768, 1 << 20, 2.5) == 16384
    assert next_chunk_size(4096, 4096, 4096, 1 << 20, 9.0) == 4096


@pytest.mark.pg
def test_without_a_chunk_size_chunks_grow_and_the_state_still_equals_the_source(
    fresh_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every window counts as fast, whatever the machine's load: the sizes are then exact
    monkeypatch.setattr(sizing, "GROW_UNDER_SECONDS", 3600.0)
    monkeypatch.setattr(sizing, "SHRINK_OVER_SECONDS", 7200.0)
    seed(fresh_db, orders=30_000)
    landing = tmp_path / "landing"
    drain(fresh_db, landing)
    writers = Writers(fresh_db, seed_value=3).start()
    try:
        send(fresh_db, "public\\.orders")
        SnapshotEngine(fresh_db, landing).run()
    finally:
        writers.stop()
    drain(fresh_db, landing)
    assert_consistent(fresh_db, landing, ["public.orders"])
    sizes = sorted(
        pq.read_metadata(p).num_rows for p in snapshot_dir(landing, "public.orders").glob("*.parquet")
    )
    full = [s for s in sizes if s in (4096, 8192, 16384)]
    assert full == [4096, 8192, 16384] and len(sizes) == 4, sizes
