"""docs/design.md §6 rule 7 on real PostgreSQL: events are lost on purpose (the table leaves the capture's
publication; rows are deleted, updated and inserted; the table comes back), then a full snapshot runs
while writers insert, update, delete and change keys. After the stream is drained and reconciled the
state equals the source, phantoms included, also when the snapshot is paused and resumed, when the
engine is killed between chunks, and when the last chunk lands after a reconcile run has started."""

from __future__ import annotations

import os
import signal as os_signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cdc_backfill.reconcile.spark.job import reconcile_landing
from cdc_backfill.signals.model import PAUSE, RESUME, Signal
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.snapshot.engine import SnapshotEngine
from cdc_backfill.snapshot.faults import CRASH_ENV
from tests.support.judge import columns_of, keyed_state, source_state
from tests.support.pg import drain, send, sql
from tests.support.state import state_frame
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.pg, pytest.mark.spark, pytest.mark.slow]

ORDERS = "public.orders"
LOSE = (
    "ALTER PUBLICATION cdc_backfill DROP TABLE orders",
    "DELETE FROM orders WHERE id % 10 = 0",
    "UPDATE orders SET status = 'lost' WHERE id % 10 = 4",
    "INSERT INTO orders SELECT i, 'lost-insert', 1, NULL FROM generate_series(9001, 9040) i",
    "ALTER PUBLICATION cdc_backfill ADD TABLE orders",
)


class PauseAfter:
    """A window hook that sends pause-snapshot inside the ``n``-th window."""

    def __init__(self, url: str, n: int) -> None:
        self.url, self.n, self.windows = url, n, 0

    def __call__(self, shape, after) -> None:  # type: ignore[no-untyped-def]
        self.windows += 1
        if self.windows == self.n:
            signals(self.url, PAUSE)


def signals(url: str, kind: str) -> None:
    store = SignalStore(url)
    store.send(Signal(f"{kind}-{len(store.rows())}", kind))
    store.sa_engine.dispose()


def run(spark, landing: Path, state: Path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return reconcile_landing(spark, landing, state, [ORDERS])["collections"][ORDERS]


def assert_state_is_source(spark, url: str, state: Path) -> None:  # type: ignore[no-untyped-def]
    _, key = columns_of(url, ORDERS)
    got = keyed_state(state_frame(spark, state, ORDERS).collect(), key)
    want = source_state(url, ORDERS, key)
    extra, missing = got.keys() - want.keys(), want.keys() - got.keys()
    wrong = [k for k in want.keys() & got.keys() if got[k] != want[k]]
    assert not (extra or missing or wrong), (
        f"{len(extra)} extra {sorted(extra)[:5]}, {len(missing)} missing, {len(wrong)} differ"
    )


def engine_process(url: str, landing: Path, crash: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({CRASH_ENV: crash} if crash else {})}
    cmd = [
        sys.executable,
        "-m",
        "cdc_backfill.cli",
        "snapshot",
        "run",
        "--source",
        url,
        "--landing",
        str(landing),
        "--once",
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize("how", ["whole", "paused", "killed", "late-chunk"])
def test_a_snapshot_after_lost_events_removes_the_phantoms(
    spark, fresh_db: str, tmp_path: Path, how: str
) -> None:  # type: ignore[no-untyped-def]
    url = fresh_db
    seed(url, orders=600, lines=20)
    landing, state = tmp_path / "landing", tmp_path / "state"
    drain(url, landing)
    send(url, "public\\.orders", chunk_size=100)
    SnapshotEngine(url, landing).run()
    drain(url, landing)
    first = run(spark, landing, state)
    assert first["phantoms_removed"] == 0
    assert_state_is_source(spark, url, state)

    sql(url, *LOSE)  # 120 rows deleted, 120 updated, 40 inserted: the stream never hears of it
    writers = Writers(url, seed_value=3, max_order=1400).start()
    try:
        send(url, "public\\.orders", chunk_size=60)
        if how == "paused":
            engine = SnapshotEngine(url, landing, window_hook=PauseAfter(url, 3))
            engine.control_interval = 0.0  # the pause takes effect before the next chunk
            engine.run()
            drain(url, landing)
            halfway = run(spark, landing, state)
            assert halfway["phantoms_removed"] == 0
            assert "no done row" in next(iter(halfway["snapshots"].values()))
            signals(url, RESUME)
            SnapshotEngine(url, landing).run()
        elif how == "killed":
            killed = engine_process(url, landing, crash="after-progress:4")
            assert killed.returncode == -os_signal.SIGKILL, killed.stderr[-2000:]
            resumed = engine_process(url, landing)
            assert resumed.returncode == 0, resumed.stderr[-2000:]
        else:
            SnapshotEngine(url, landing).run()
    finally:
        writers.stop()
    drain(url, landing)
    if how == "late-chunk":
        # the done row is in the stream, the last chunk file is not there yet when the run lists them
        last = max((landing / "snapshots" / ORDERS).glob("*.parquet"), key=lambda p: p.stat().st_mtime)
        hidden = last.rename(tmp_path / last.name)
        early = run(spark, landing, state)
        assert early["phantoms_removed"] == 0
        assert next(iter(early["snapshots"].values())).startswith("waiting: ")
        hidden.rename(last)
    final = run(spark, landing, state)
    print(
        how,
        {k: final[k] for k in ("rows", "phantoms_removed", "reads_applied", "reads_dropped", "snapshots")},
    )
    assert final["phantoms_removed"] > 0
    assert list(final["snapshots"].values()) == ["rows before its start removed"]
    assert_state_is_source(spark, url, state)
