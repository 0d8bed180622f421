"""The consistency torture test: seeded random writers during a snapshot (inserts, updates, deletes,
key changes, TOAST-only updates, transactions spanning several windows, a truncate in the middle of a
window), on three tables with an integer, a text and a composite key; a reconcile run while the writers
are still going and one after they stop and the stream is drained. The state must equal the source
exactly, every row and every value.

``make torture SEEDS=50`` runs more seeds (``TORTURE_SEEDS``; CI runs 5) and lists failing seeds.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from cdc_backfill.reconcile.reread import plan_rereads
from cdc_backfill.reconcile.spark.job import reconcile_landing
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.snapshot.engine import SnapshotEngine
from tests.support.judge import columns_of, overlap, source_state
from tests.support.pg import drain, send
from tests.support.state import state_frame
from tests.support.torture import TABLES, Torture
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.pg, pytest.mark.spark, pytest.mark.slow, pytest.mark.torture]

SEEDS = int(os.environ.get("TORTURE_SEEDS", "5"))


def reread_incomplete(url: str, landing: Path, state: Path) -> int:
    """What the reconcile's Airflow task does (``cdc-backfill signal reread``): re-read the keys whose
    rows miss a value the stream never sent; returns how many."""
    store = SignalStore(url)
    n = 0
    for plan in plan_rereads(state, TABLES):
        for sig in plan.signals:
            store.send(sig)
        n += plan.missing
    store.sa_engine.dispose()
    SnapshotEngine(url, landing, readers=1).run()
    drain(url, landing)
    return n


# every seed on local disk, and the first one with the lake on the S3 server
@pytest.mark.parametrize(
    ("seed_value", "lake"), [*((s, "local") for s in range(SEEDS)), (0, "s3")], indirect=["lake"]
)
def test_state_equals_the_source_under_random_concurrent_writes(
    spark, fresh_db: str, lake, seed_value: int
) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(seed_value)
    seed(fresh_db, orders=rng.randint(150, 400), lines=rng.randint(150, 400), docs_every=4)
    landing, state = lake / "landing", lake / "state"
    drain(fresh_db, landing)
    writers = Writers(fresh_db, seed_value=seed_value, max_order=900, toast_moves=True).start()
    try:
        send(fresh_db, *[t.replace(".", "\\.") for t in TABLES], chunk_size=rng.randint(13, 61))
        hook = Torture(fresh_db, rng, writers)  # a writer's change inside every window, on any machine
        SnapshotEngine(fresh_db, landing, readers=rng.choice([1, 2]), window_hook=hook).run()
        drain(fresh_db, landing)
        reconcile_landing(spark, landing, state)  # an incremental run while the writers still write
    finally:
        writers.stop()
    drain(fresh_db, landing)
    seen = overlap(fresh_db, landing, TABLES)  # the snapshot's windows (a re-read below adds its own)
    summary = reconcile_landing(spark, landing, state)
    incomplete = {c: i["rows_with_unknown_columns"] for c, i in summary["collections"].items()}
    if any(incomplete.values()):
        # rows whose old key's value was never known (moved before their chunk read them): re-read
        assert reread_incomplete(fresh_db, landing, state) == sum(incomplete.values())
        summary = reconcile_landing(spark, landing, state)
    print(f"seed {seed_value}: incomplete rows re-read {incomplete}, phantoms removed",
          {c: i["phantoms_removed"] for c, i in summary["collections"].items()})  # fmt: skip
    assert all(info["rows_with_unknown_columns"] == 0 for info in summary["collections"].values())
    assert hook.windows >= hook.truncate_at, "the truncate happened"
    assert seen.windows and seen.windows_with_changes == seen.windows, "writers changed rows in every window"
    assert summary["events"] > 0  # the log read (nothing is quarantined at the reconcile: ingest does that)
    diverged = []
    for coll in TABLES:
        columns, key = columns_of(fresh_db, coll)
        want = source_state(fresh_db, coll, key)
        got = {}
        for r in state_frame(spark, state, coll).collect():
            row = {c.name: r[c.name] for c in columns}
            got[tuple(row[k] for k in key)] = row
        missing, extra = want.keys() - got.keys(), got.keys() - want.keys()
        wrong = [k for k in want.keys() & got.keys() if got[k] != want[k]]
        if wrong:
            k = sorted(wrong, key=str)[0]
            diverged.append(f"{coll} {k}: state {got[k]} != source {want[k]}")
        if missing or extra or wrong:
            diverged.append(f"{coll}: {len(missing)} missing, {len(extra)} extra, {len(wrong)} differ "
                            f"(e.g. {sorted(missing | extra | set(wrong), key=str)[:3]})")  # fmt: skip
        info = summary["collections"][coll]
        assert info["reads_waiting"] == 0 and info["windows_pending"] == 0, (coll, info)
    assert not diverged, f"seed {seed_value} diverged:\n" + "\n".join(diverged)
