"""End to end on real PostgreSQL: snapshot while writers run, drain, reconcile (the Spark job), then
``cdc-backfill verify`` finds every range equal; a row corrupted by hand in the state is found in exactly
its range, ``verify --repair`` sends the signal that re-reads it, and after the engine, a drain and a
reconcile every range is equal again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from cdc_backfill.cli import main
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.snapshot.engine import SnapshotEngine
from tests.support.pg import InWindow, drain, send
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.pg, pytest.mark.spark, pytest.mark.slow]

COLLECTIONS = ("public.orders", "public.lines", "public.words")


def reconcile(landing: Path, state: Path) -> dict:
    res = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "reconcile", "--landing", str(landing), "--state", str(state),
         "--master", "local[2]"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def verify_here(capsys, url: str, state: Path, collection: str, *extra: str) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    """The command in this process (it uses the tests' Spark session): (exit status, stdout)."""
    capsys.readouterr()
    code = main(["verify", "--source", url, "--state", str(state), "--collection", collection, *extra])
    return code, capsys.readouterr().out


def corrupt_one_row(state: Path, collection: str) -> int:
    """Change one non-key value of one row in the current Parquet of the state, by hand; return its id."""
    current = state / collection / "current"
    part = next(p for p in sorted(current.glob("part-*.parquet")) if pq.read_metadata(p).num_rows > 0)
    table = pq.read_table(part)
    row = table.num_rows // 2
    victim = table.column("id")[row].as_py()
    status = table.column("status").to_pylist()
    status[row] = status[row] + "-corrupted"
    table = table.set_column(table.schema.get_field_index("status"), "status", pa.array(status, pa.string()))
    pq.write_table(table, part)
    (part.parent / f".{part.name}.crc").unlink(missing_ok=True)  # Spark's checksum of the old bytes
    assert pc.sum(pc.equal(pq.read_table(current).column("id"), victim)).as_py() == 1
    return int(victim)


def test_verify_finds_and_repairs_a_corrupted_row(fresh_db: str, tmp_path: Path, spark, capsys) -> None:  # type: ignore[no-untyped-def]
    seed(fresh_db, orders=400, lines=400)
    landing, state = tmp_path / "landing", tmp_path / "state"
    drain(fresh_db, landing)  # the slot exists before anything happens
    writers = Writers(fresh_db, seed_value=11).start()
    try:
        send(fresh_db, *[c.replace(".", "\\.") for c in COLLECTIONS], chunk_size=37)
        SnapshotEngine(fresh_db, landing, readers=2, window_hook=InWindow(fresh_db)).run()
    finally:
        ops = writers.stop()
    assert ops > 10, "the writers must have run during the snapshot"
    drain(fresh_db, landing)
    summary = reconcile(landing, state)
    assert summary["collections"]["public.orders"]["reads_dropped"] > 0  # the in-window changes

    for coll in COLLECTIONS:
        code, out = verify_here(capsys, fresh_db, state, coll)
        assert code == 0, out
        assert "every range equal" in out

    victim = corrupt_one_row(state, "public.orders")
    code, out = verify_here(capsys, fresh_db, state, "public.orders", "--json")
    assert code == 1
    report = json.loads(out)
    assert len(report["ranges"]) == 16
    [bad] = report["differing"]
    found = report["ranges"][bad]
    assert found["source_rows"] == found["state_rows"]  # same keys, one value differs
    assert found["after"] is None or int(found["after"][0]) < victim
    assert found["upto"] is None or victim <= int(found["upto"][0])

    code, out = verify_here(capsys, fresh_db, state, "public.orders", "--repair")
    assert code == 1  # the state still differs until the repair has run
    line = next(line for line in out.splitlines() if line.startswith("repair: execute-snapshot "))
    signal_id = line.split()[2]
    assert f"ranges {bad};" in line
    sent = {v.id: v for v in SignalStore(fresh_db).list()}
    assert sent[signal_id].status == "accepted" and sent[signal_id].collections == ["public.orders"]

    SnapshotEngine(fresh_db, landing, readers=2).run()
    assert {v.id: v for v in SignalStore(fresh_db).list()}[signal_id].status == "done"
    drain(fresh_db, landing)
    reconcile(landing, state)
    # the real command line, in its own process and Spark session
    res = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "verify", "--source", fresh_db, "--state", str(state),
         "--collection", "public.orders", "--json", "--master", "local[2]"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    after = json.loads(res.stdout)
    assert after["all_equal"] and after["summary"]["differing"] == 0
    assert after["summary"]["source_rows"] == after["summary"]["state_rows"] > 0
