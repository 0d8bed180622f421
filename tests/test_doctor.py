from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cdc_backfill import doctor


def test_render_shows_the_fix_for_what_failed() -> None:
    text = doctor.render(
        [
            doctor.Check("Java", True, "Java 17 from PATH", seconds=0.1),
            doctor.Check("PostgreSQL", False, "wal_level=replica", "ALTER SYSTEM SET wal_level = logical"),
        ]
    )
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["part", "status", "seconds"]
    assert any(line.startswith("Java") and " OK " in line for line in lines)
    assert any("FAIL" in line and "FIX: ALTER SYSTEM SET wal_level = logical" in line for line in lines)
    assert lines[-1].startswith("1 of 2 parts OK")


def test_a_check_that_raises_is_reported_not_raised() -> None:
    def broken() -> doctor.Check:
        raise OSError("disk on fire")

    c = doctor.timed("Disk", broken)
    assert not c.ok
    assert "disk on fire" in c.detail


@pytest.mark.pg
def test_postgres_check_against_a_real_server(pg_url: str) -> None:
    c = doctor.check_postgres(pg_url)
    assert c.ok, c.detail
    assert "wal_level=logical" in c.detail
    assert "pgoutput slot ok" in c.detail


@pytest.mark.pg
def test_postgres_check_says_how_to_fix_an_unreachable_server() -> None:
    c = doctor.check_postgres("postgresql+psycopg2://nobody:secret@127.0.0.1:1/none")
    assert not c.ok
    assert "secret" not in c.detail
    assert "***" in c.detail
    assert c.fix


@pytest.mark.slow
@pytest.mark.pg
@pytest.mark.spark
@pytest.mark.airflow
def test_doctor_cli_reports_every_part_ok(pg_url: str, airflow_db: str) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "doctor", "--json", "--source", pg_url],
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ.copy(),
    )
    assert res.returncode == 0, res.stdout + res.stderr
    checks = {c["part"]: c for c in json.loads(res.stdout)}
    assert set(checks) == {"Python", "PostgreSQL", "Java", "Spark", "Airflow"}
    assert all(c["ok"] for c in checks.values()), checks
