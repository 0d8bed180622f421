"""``make airflow`` (``cdc-backfill airflow``): Airflow for this checkout, with the project's DAGs and
plugin, no examples, a login it prints; stopped cleanly by Ctrl-C."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from cdc_backfill.config import SourceSetting
from cdc_backfill.pg.embedded import free_port
from cdc_backfill.standalone import airflow_connection, airflow_environ, ensure_password
from tests.conftest import ROOT, unavailable


def test_environment_points_at_this_checkout_and_lets_the_user_win(tmp_path: Path) -> None:
    source = SourceSetting("postgresql+psycopg2://cdc:pw@db:5433/app", "--source")
    env = airflow_environ(ROOT, tmp_path, 8081, "127.0.0.1", source,
                          {"PATH": "/usr/bin", "AIRFLOW__CORE__PARALLELISM": "8", "EMPTY": ""})  # fmt: skip
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(ROOT / "dags")
    assert env["AIRFLOW__CORE__PLUGINS_FOLDER"] == str(ROOT / "plugins")
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    assert env["AIRFLOW_HOME"] == str(tmp_path)
    assert env["AIRFLOW__CORE__PARALLELISM"] == "8"  # the user's setting
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:8081/execution/"
    assert env["PATH"].split(os.pathsep)[0] == str(Path(sys.executable).parent)  # standalone finds `airflow`
    assert json.loads(env["AIRFLOW_CONN_CDC_SOURCE"]) == {
        "conn_type": "postgres", "host": "db", "port": 5433, "login": "cdc", "password": "pw", "schema": "app",
    }  # fmt: skip
    assert "AIRFLOW_CONN_CDC_SOURCE" not in airflow_environ(ROOT, tmp_path, 8081, "127.0.0.1", None, {})


def test_connection_json_for_each_source() -> None:
    assert json.loads(airflow_connection("mssql+pymssql://sa@h/db")) == {
        "conn_type": "mssql", "host": "h", "login": "sa", "schema": "db",
    }  # fmt: skip


def test_password_is_made_once_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "home" / "passwords.json"
    first = ensure_password(path)
    assert len(first) >= 12 and ensure_password(path) == first
    assert json.loads(path.read_text()) == {"admin": first}


@pytest.mark.slow
@pytest.mark.airflow
def test_make_airflow_serves_the_project_dags_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(AIRFLOW_HOME=str(tmp_path / "home"), CDC_BACKFILL_SCHEDULES=str(tmp_path / "none.toml"))
    # what `make airflow` runs, with a port of its own
    proc = subprocess.Popen(
        [sys.executable, "-m", "cdc_backfill.cli", "airflow", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("ready: "):
                break
        ready = next((x for x in lines if x.startswith("ready: ")), None)
        if ready is None:
            unavailable("airflow standalone", "".join(lines)[-2000:])
        m = re.match(r"ready: (\S+)  \(log in as admin, password (\S+); kept in", ready)
        assert m, ready
        http = httpx.Client(base_url=m.group(1), timeout=30)
        token = http.post("/auth/token", json={"username": "admin", "password": m.group(2)}).json()
        http.headers["Authorization"] = f"Bearer {token['access_token']}"
        dags: set[str] = set()
        while time.monotonic() < deadline and "cdc_incremental_snapshot" not in dags:
            dags = {d["dag_id"] for d in http.get("/api/v2/dags").json()["dags"]}
            time.sleep(2)
        assert {"cdc_incremental_snapshot", "cdc_stop_snapshot", "cdc_capture_postgres", "cdc_doctor"} <= dags
        assert all(d.startswith("cdc_") for d in dags), dags  # no example DAGs
        assert http.get("/api/v2/dags").status_code == 200
        http.headers.pop("Authorization")
        assert http.get("/api/v2/dags").status_code == 401
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 0, "".join(lines) + out
    assert "Airflow stopped" in out
