"""End to end on real PostgreSQL: snapshot while writers run, drain, reconcile (the Spark job's run), then
``cdc-backfill verify`` finds every range equal; a row corrupted by hand in the state is found in exactly
its range, ``verify --repair`` sends the signal that re-reads it, and after the engine, a drain and a
reconcile every range is equal again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cdc_backfill.signals.store import SignalStore
from cdc_backfill.snapshot.engine import SnapshotEngine
from tests.support.cli import in_process
from tests.support.judge import overlap
from tests.support.pg import InWindow, drain, send
from tests.support.runs import reconcile_here
from tests.support.tamper import add_phantom, corrupt_one_row
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.pg, pytest.mark.spark, pytest.mark.slow]

COLLECTIONS = ("public.orders", "public.lines", "public.words")


def verify_here(capsys, url: str, state: Path, collection: str, *extra: str) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """The command in this process (it uses the tests' Spark session): (exit status, stdout)."""
    res = in_process(
        capsys, "verify", "--source", url, "--state", str(state), "--collection", collection, *extra
    )
    sys.stderr.write(res.stderr)  # shown with a failure: why a verify could not run is printed there
    return res.returncode, res.stdout


def range_of(report: dict, key: int) -> int:
    """The index of the verify range a key falls in."""
    for i, r in enumerate(report["ranges"]):
        if (r["after"] is None or int(r["after"][0]) < key) and (
            r["upto"] is None or key <= int(r["upto"][0])
        ):
            return i
    raise AssertionError(key)


@pytest.mark.parametrize("lake", ["local", "s3"], indirect=True)
def test_verify_finds_and_repairs_a_corrupted_row(fresh_db: str, lake, spark, capsys) -> None:  # type: ignore[no-untyped-def]
    seed(fresh_db, orders=400, lines=400)
    landing, state = lake / "landing", lake / "state"
    drain(fresh_db, landing)  # the slot exists before anything happens
    writers = Writers(fresh_db, seed_value=11).start()
    try:
        send(fresh_db, *[c.replace(".", "\\.") for c in COLLECTIONS], chunk_size=37)
        SnapshotEngine(fresh_db, landing, readers=2, window_hook=InWindow(fresh_db, writers=writers)).run()
    finally:
        writers.stop()
    drain(fresh_db, landing)
    seen = overlap(fresh_db, landing, COLLECTIONS)
    assert seen.windows and seen.windows_with_changes == seen.windows, "writers changed rows in every window"
    summary = reconcile_here(spark, landing, state)
    assert summary["collections"]["public.orders"]["reads_dropped"] > 0  # the in-window changes

    for coll in COLLECTIONS:
        code, out = verify_here(capsys, fresh_db, state, coll)
        assert code == 0, out
        assert "every range equal" in out

    victim = corrupt_one_row(state, "public.orders")
    ghost = add_phantom(state, "public.orders", fresh_db)
    code, out = verify_here(capsys, fresh_db, state, "public.orders", "--json")
    assert code == 1
    report = json.loads(out)
    assert report["repair_command"].endswith("--collection public.orders --repair --wait --landing LANDING")
    assert len(report["ranges"]) == 16
    bad, extra = range_of(report, victim), range_of(report, ghost)
    assert set(report["differing"]) == {bad, extra}
    if bad != extra:
        assert (
            report["ranges"][bad]["source_rows"] == report["ranges"][bad]["state_rows"]
        )  # one value differs
    assert report["ranges"][extra]["state_rows"] == report["ranges"][extra]["source_rows"] + (extra != bad)

    code, out = verify_here(capsys, fresh_db, state, "public.orders", "--repair")
    assert code == 1  # the state still differs until the repair has run
    line = next(line for line in out.splitlines() if line.startswith("repair: execute-snapshot "))
    signal_id = line.split()[2]
    assert all(str(i) in line for i in (bad, extra))
    sent = {v.id: v for v in SignalStore(fresh_db).list()}
    assert sent[signal_id].status == "accepted" and sent[signal_id].collections == ["public.orders"]

    SnapshotEngine(fresh_db, landing, readers=2).run()
    assert {v.id: v for v in SignalStore(fresh_db).list()}[signal_id].status == "done"
    drain(fresh_db, landing)
    repaired = reconcile_here(spark, landing, state)["collections"]["public.orders"]
    # the repair's condition reads key columns only: its finished snapshot removes the phantom
    assert repaired["phantoms_removed"] == 1, repaired
    code, out = verify_here(capsys, fresh_db, state, "public.orders", "--json")
    assert code == 0, out
    after = json.loads(out)
    assert after["all_equal"] and after["summary"]["differing"] == 0
    assert after["summary"]["source_rows"] == after["summary"]["state_rows"] > 0
