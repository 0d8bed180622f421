"""The installed package is an Airflow provider: Airflow's own commands list its connection type and its
plugin with no plugins folder, and a checkout's plugins folder does not register the plugin twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.airflow.conftest import DAGS

pytestmark = pytest.mark.airflow

AIRFLOW = Path(sys.executable).with_name("airflow")


def airflow_json(home: Path, plugins: Path, *args: str) -> list[dict]:
    """``airflow ARGS -o json`` as a user runs it, in a home of its own."""
    env = {**os.environ, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__PLUGINS_FOLDER": str(plugins),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}  # fmt: skip
    res = subprocess.run([str(AIRFLOW), *args, "-o", "json"], env=env, capture_output=True, text=True,
                         timeout=180, cwd=home)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout)


def test_the_package_registers_its_connection_type_and_plugin_without_a_plugins_folder(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "plugins"
    empty.mkdir()
    hooks = {h["connection_type"]: h for h in airflow_json(tmp_path, empty, "providers", "hooks")}
    source = hooks["cdc_backfill_source"]
    assert source["class"] == "cdc_backfill.airflow.hooks.CdcSourceHook"
    assert source["package_name"] == "cdc-backfill" and source["hook_name"].startswith("cdc_backfill source")
    [plugin] = [p for p in airflow_json(tmp_path, empty, "plugins") if p["name"] == "cdc_backfill"]
    assert "EntryPoint" in plugin["source"] and plugin["external_views"][0]["category"] == "browse"
    assert plugin["fastapi_apps"][0]["url_prefix"] == "/cdc-backfill"


def test_a_checkout_plugins_folder_beside_the_installed_package_registers_it_once() -> None:
    code = (
        "from airflow import plugins_manager as pm; pm.ensure_plugins_loaded(); import json; "
        "print(json.dumps([[p['name'] for p in pm.get_plugin_info()], pm.get_import_errors()]))"
    )
    # providers discovered eagerly too: where a provider's own plugins load as well (the Kafka
    # provider's is then registered twice, by Airflow itself)
    env = {**os.environ, "AIRFLOW__CORE__PLUGINS_FOLDER": str(DAGS.parent / "plugins"),
           "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "AIRFLOW__CORE__LAZY_DISCOVER_PROVIDERS": "False"}  # fmt: skip
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    names, errors = json.loads(res.stdout.strip().splitlines()[-1])
    ours = {source: e for source, e in errors.items() if "cdc_backfill" in source or "cdc_backfill" in e}
    assert names.count("cdc_backfill") == 1 and ours == {}


def test_a_connection_of_the_providers_type_is_a_postgresql_source(monkeypatch: pytest.MonkeyPatch) -> None:
    from cdc_backfill.airflow.hooks import CdcSourceHook

    conn = {"conn_type": "cdc_backfill_source", "host": "db", "port": 5433, "schema": "app", "login": "cdc",
            "password": "pw"}  # fmt: skip
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", json.dumps(conn))
    assert CdcSourceHook().get_source_url() == "postgresql+psycopg2://cdc:pw@db:5433/app"
