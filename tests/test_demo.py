"""The demo's pure parts: the seed SQL and the closing summary (the whole demo is `make demo`)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_backfill.demo import TABLES, Figures, next_commands, seed_sql, summary_rows
from tests.support.output import spark_info_lines


def test_seed_fills_both_tables_with_half_the_rows_each() -> None:
    sql = seed_sql(200_000)
    assert len(sql) == 2 and all("generate_series(1, 100000)" in s for s in sql)


def test_summary_says_verified_only_when_every_range_is_equal() -> None:
    f = Figures(rows=10, chunks=3, snapshot_rows=10, seconds={"snapshot": 2.0, "reconcile": 4.0})
    f.reconcile = {
        "events": 7,
        "quarantined": 0,
        "collections": {TABLES[0]: {"reads_dropped": 1, "reads_applied": 9}},
    }
    f.verified = {TABLES[0]: {"all_equal": True, "ranges": 16, "equal": 16, "rows": 10},
                  TABLES[1]: {"all_equal": False, "ranges": 16, "equal": 15, "rows": 5}}  # fmt: skip
    lines = dict(summary_rows(f))
    assert lines["READs applied / dropped"].startswith("9 / 1")
    assert lines[f"verify {TABLES[0]}"].startswith("equal: 16/16")
    assert lines[f"verify {TABLES[1]}"].startswith("DIFFERENT: 15/16")
    assert lines["total time"] == "6.0 s"


def test_the_closing_commands_name_this_venv_and_the_state_folder(tmp_path: Path) -> None:
    cmds = [c for c, _ in next_commands(".venv/bin/cdc-backfill", Path(".cdc/demo/state"), with_make=True)]
    assert cmds[0] == ".venv/bin/cdc-backfill state --state .cdc/demo/state"
    assert cmds[-1] == "make airflow"
    assert "duckdb -c" not in " ".join(cmds)
    assert "make airflow" not in [c for c, _ in next_commands("x", Path("s"), with_make=False)]
    # with the server kept, Airflow is started on it and on the demo's lake
    kept = next_commands("x", tmp_path / "state", True, "postgresql://u@h:1/db", tmp_path / "landing")
    assert kept[-1][0] == (
        f"CDC_BACKFILL_SOURCE_URL=postgresql://u@h:1/db CDC_BACKFILL_LANDING={tmp_path / 'landing'} "
        f"CDC_BACKFILL_STATE={tmp_path / 'state'} make airflow"
    )


@pytest.mark.slow
@pytest.mark.pg
@pytest.mark.spark
def test_demo_shows_only_its_own_steps_keeps_its_server_and_every_next_command_runs(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "demo", "--rows", "3000", "--folder", "demo", "--keep"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    try:
        out = res.stdout + res.stderr
        assert res.returncode == 0, out
        assert not spark_info_lines(out), out
        assert "low watermark written" not in out  # the chunk log is in demo.log, and with -v
        assert "low watermark written" in (tmp_path / "demo" / "demo.log").read_text()
        assert "public.customers: done in" in res.stderr  # the reconcile's steps
        printed = res.stdout.split("\nNext:\n", 1)[1].splitlines()
        cmds = [c.strip() for c in printed[:-1:2]]
        assert not any("make " in c for c in cmds), cmds  # not in a checkout: no `make airflow`
        kinds = [shlex.split(c)[1:3] for c in cmds]
        for want in (
            ["signal", "list"],
            ["snapshot", "status"],
            ["capture", "status"],
            ["verify", "--source"],
        ):
            assert want in kinds, cmds
        assert any("--repair" in c for c in cmds)
        assert "PostgreSQL keeps running at postgresql://" in printed[-1]
        for cmd in cmds:
            ran = subprocess.run(shlex.split(cmd), cwd=tmp_path, capture_output=True, text=True, timeout=600)
            assert ran.returncode == 0, f"{cmd}\n{ran.stdout}{ran.stderr}"
        stop = shlex.split(res.stdout.rsplit("stop it with: ", 1)[1].strip())  # as printed
    finally:
        stop = locals().get("stop") or [
            sys.executable,
            "-m",
            "cdc_backfill.cli",
            "demo",
            "--stop",
            "--folder",
            "demo",
        ]
        done = subprocess.run(stop, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "stopped" in done.stdout, (done.stdout, done.stderr)


@pytest.mark.slow
@pytest.mark.pg
@pytest.mark.spark
def test_demo_with_its_lake_on_s3_and_every_command_it_prints_runs(tmp_path: Path, s3_lake) -> None:  # type: ignore[no-untyped-def]
    lake = f"{s3_lake}/demo"
    res = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "demo", "--rows", "3000", "--folder", "demo", "--lake", lake],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert f"Artifacts: demo and {lake}" in res.stdout
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == ["demo.log", "postgres", "summary.json"]
    printed = res.stdout.split("\nNext:\n", 1)[1].splitlines()[::2]
    assert len(printed) == 3 and all(f"--state {lake}/state" in c for c in printed), printed
    for cmd in printed:
        ran = subprocess.run(shlex.split(cmd), cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0, f"{cmd}\n{ran.stdout}{ran.stderr}"
        assert "(" in ran.stdout.splitlines()[-1]  # "(n rows)"


@pytest.mark.slow
@pytest.mark.pg
@pytest.mark.spark
@pytest.mark.kafka
def test_demo_through_kafka_and_every_command_it_prints_runs(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "demo", "--kafka", "--rows", "3000", "--folder", "demo"],
        cwd=tmp_path, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    said = " ".join(res.stdout.split())  # the console wraps its lines
    assert "Kafka Connect with Debezium streaming to topics demo.*" in said
    assert re.search(r"capture kafka: [\d,]+ events from \d+ topics", said), res.stdout
    summary = json.loads((tmp_path / "demo" / "summary.json").read_text())
    assert summary["changes"] > 0 and all(v["all_equal"] for v in summary["verified"].values()), summary
    for cmd in res.stdout.split("\nNext:\n", 1)[1].splitlines()[::2]:
        ran = subprocess.run(shlex.split(cmd), cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0, f"{cmd}\n{ran.stdout}{ran.stderr}"
