"""`cdc-backfill reconcile` end to end: spark-submit of the job, a versioned state that DuckDB reads."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from cdc_backfill.snapshot.engine import SnapshotEngine
from cdc_backfill.spark.submit import reconcile_command
from cdc_backfill.state.table import StateTable, current_version
from tests.support.judge import columns_of, source_state
from tests.support.pg import InWindow, drain, send, sql
from tests.support.state import state_files, state_version
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.spark, pytest.mark.pg, pytest.mark.slow]


def test_submit_command_is_plain_data() -> None:
    cmd = reconcile_command(
        "lake/", "state/", ["public.orders"], master="spark://h:7077", conf={"spark.executor.memory": "4g"}
    )
    assert cmd[:5] == ["spark-submit", "--master", "spark://h:7077", "--name", "cdc_backfill_reconcile"]
    # Spark's own log at WARN unless detail is asked for (spark.log4j)
    assert cmd[5] == "--driver-java-options" and cmd[6].startswith("-Dlog4j2.configurationFile=file:")
    assert cmd[7:9] == ["--conf", "spark.executor.memory=4g"]
    assert cmd[9].endswith("cdc_backfill/jobs/reconcile.py")
    assert cmd[10:] == ["--landing", "lake/", "--state", "state/", "--collections", "public.orders"]


def test_submit_command_with_detail_leaves_spark_its_own_log(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDC_BACKFILL_SPARK_LOG_LEVEL", "INFO")
    cmd = reconcile_command("lake/", "state/", verbose=True, signal_table="ops.signals")
    java_options = cmd[cmd.index("--driver-java-options") + 1] if "--driver-java-options" in cmd else ""
    assert "log4j2" not in java_options  # (Spark's class archive may be there: spark.classes)
    assert cmd[-3:] == ["--signal-table", "ops.signals", "--verbose"]


def run_reconcile(landing: Path, state: Path) -> dict:
    res = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "reconcile", "--landing", str(landing), "--state", str(state),
         "--master", "local[2]"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if res.returncode != 0:
        Path("/tmp/job.err").write_text(res.stderr)
        Path("/tmp/job.out").write_text(res.stdout)
    assert res.returncode == 0, "\n".join(line for line in res.stderr.splitlines() if " INFO " not in line)[
        -3000:
    ]
    assert "Using incubator modules" not in res.stderr  # the JVM's own noise is not relayed
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_reconcile_job_writes_versioned_states_equal_to_the_source(fresh_db: str, tmp_path: Path) -> None:
    seed(fresh_db, orders=300, lines=300)
    landing, state = tmp_path / "landing", tmp_path / "state"
    drain(fresh_db, landing)
    writers = Writers(fresh_db, seed_value=5).start()
    try:
        send(fresh_db, "public\\.orders", "public\\.lines", chunk_size=37)
        SnapshotEngine(fresh_db, landing, readers=2, window_hook=InWindow(fresh_db)).run()
    finally:
        writers.stop()
    drain(fresh_db, landing)
    summary = run_reconcile(landing, state)
    assert summary["events"] > 0  # the log read (nothing is quarantined at the reconcile: ingest does that)
    for coll in ("public.orders", "public.lines"):
        columns, key = columns_of(fresh_db, coll)
        want = source_state(fresh_db, coll, key)
        got = duckdb.sql(
            "SELECT * EXCLUDE (_cdc_position, _cdc_unknown) FROM read_parquet($files)",
            params={"files": [str(f) for f in state_files(state, coll)]},
        ).fetchall()
        names = [c.name for c in columns]
        got_rows = {tuple(r[names.index(k)] for k in key): dict(zip(names, r, strict=True)) for r in got}
        assert got_rows == want, coll
        info = summary["collections"][coll]
        assert info["rows"] == len(want)
        assert info["reads_waiting"] == 0
        assert info["reads_applied"] + info["reads_dropped"] == info["reads"] > 0
        assert info["events_applied"] > 0
    assert summary["collections"]["public.orders"]["reads_dropped"] > 0  # the in-window changes
    # with nothing new (the writers' last events of other tables end the log after this state's
    # position), a run writes no version
    assert run_reconcile(landing, state).get("nothing_new") is True
    # a change: a second run commits a second version; the first stays readable
    sql(fresh_db, "UPDATE orders SET status = 'again' WHERE id = (SELECT min(id) FROM orders)")
    drain(fresh_db, landing)
    run_reconcile(landing, state)
    assert state_version(state, "public.orders").version == 1
    assert [h["version"] for h in StateTable(state, "public.orders").history()] == [0, 1]
    assert all(Path(f).is_file() for f in current_version(state, "public.orders", version=0).files)
    # a state whose table cannot be read: one line naming it, exit 1, no traceback, nothing written
    broken = tmp_path / "broken"
    shutil.copytree(state, broken)
    (broken / "public.orders" / "_delta_log" / "00000000000000000000.json").write_text("not json\n")
    res = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "reconcile", "--landing", str(landing), "--state", str(broken)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert "public.orders: cannot read its log of the state table" in res.stderr, res.stderr[-3000:]
    assert sorted(p.name for p in (broken / "_runs").iterdir()) == sorted(
        p.name for p in (state / "_runs").iterdir()
    )
