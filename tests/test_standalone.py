"""``make airflow`` (``cdc-backfill airflow``): Airflow for this checkout, with the project's DAGs and
plugin, no examples, a login it prints; stopped cleanly by Ctrl-C."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from cdc_backfill.config import SourceSetting
from cdc_backfill.standalone import airflow_connection, airflow_environ, ensure_password
from tests.conftest import ROOT


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


# The live `cdc-backfill airflow` (what `make airflow` runs: ready line, project DAGs only, Ctrl-C) is
# checked by tests/airflow/test_browser.py, which drives that same server.
