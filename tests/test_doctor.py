from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_backfill import doctor
from tests.support.pg import plain_url


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


def test_a_part_not_set_up_yet_is_a_next_step_not_a_failure() -> None:
    checks = [
        doctor.Check("Spark", True, "local session"),
        doctor.Check("Airflow", False, "not set up yet", "`make airflow`", setup_needed=True),
    ]
    text = doctor.render(checks)
    assert "FAIL" not in text
    assert any(line.startswith("Airflow") and "NOT SET UP" in line and "NEXT: `make airflow`" in line
               for line in text.splitlines())  # fmt: skip
    assert text.splitlines()[-1].startswith("1 of 2 parts OK, 1 not set up yet")
    assert doctor.healthy(checks)
    assert json.loads(doctor.to_json(checks))[1]["status"] == "NOT SET UP"
    assert not doctor.healthy([*checks, doctor.Check("Java", False, "none", "install Java")])


@pytest.mark.slow
def test_airflow_without_a_metadata_db_is_not_set_up(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AIRFLOW_HOME", str(tmp_path / "fresh-airflow-home"))  # as on a fresh clone
    c = doctor.check_airflow()
    assert not c.ok and c.setup_needed, c
    assert "make airflow" in c.fix


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
        # the URL as people type it: no driver named
        [
            sys.executable,
            "-m",
            "cdc_backfill.cli",
            "doctor",
            "--json",
            "--source",
            plain_url(pg_url),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ.copy(),
    )
    assert res.returncode == 0, res.stdout + res.stderr
    checks = {c["part"]: c for c in json.loads(res.stdout)}
    assert set(checks) == {"Python", "PostgreSQL", "Java", "Spark", "Airflow"}
    assert all(c["ok"] for c in checks.values()), checks
