"""A real Airflow (``airflow standalone``: api-server, scheduler, dag-processor, triggerer) on loopback,
driven through REST API v2 the way an operator's tools drive it. One server start covers:

- a conf that breaks a Param's schema is refused (400) before any run exists;
- cdc_incremental_snapshot triggered with a conf runs to success, verify included;
- cdc_stop_snapshot stops a snapshot that is running (its task ends skipped, the progress says stopped);
- the plugin's progress page answers over HTTP with the collections and their progress, and every task
  logs each chunk's watermarks.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cdc_backfill.pg.embedded import free_port
from tests.airflow.conftest import DAGS, conn_env
from tests.conftest import ROOT, unavailable
from tests.support.workload import seed

pytestmark = [pytest.mark.airflow, pytest.mark.pg, pytest.mark.spark, pytest.mark.slow]

PASSWORD = "cdc-test-password"
FINISHED = {"success", "failed"}


class Airflow:
    def __init__(self, base: str) -> None:
        self.base = base
        self.http = httpx.Client(base_url=base, timeout=30)

    def login(self) -> None:
        r = self.http.post("/auth/token", json={"username": "admin", "password": PASSWORD})
        r.raise_for_status()
        self.http.headers["Authorization"] = f"Bearer {r.json()['access_token']}"

    def api(self, method: str, path: str, **kw: Any) -> httpx.Response:
        return self.http.request(method, f"/api/v2{path}", **kw)

    def trigger(self, dag_id: str, conf: dict[str, Any]) -> httpx.Response:
        # logical_date must be present (null: "now") or the API refuses the body
        return self.api("POST", f"/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf})

    def run_state(self, dag_id: str, run_id: str) -> str:
        return self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}").json()["state"]

    def task_states(self, dag_id: str, run_id: str) -> dict[tuple[str, int], str | None]:
        tis = self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances").json()["task_instances"]
        return {(t["task_id"], t["map_index"]): t["state"] for t in tis}

    def log(self, dag_id: str, run_id: str, task_id: str, map_index: int = -1) -> str:
        r = self.api(
            "GET",
            f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/logs/1",
            params={"map_index": map_index, "full_content": True},
            headers={"Accept": "application/json"},
        )
        r.raise_for_status()
        return json.dumps(r.json())


def wait_for(
    what: str, check: Callable[[], Any], seconds: float, proc: subprocess.Popen[bytes], log: Path
) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(
                f"airflow standalone exited ({proc.returncode}) while waiting for {what}:\n{tail(log)}"
            )
        try:
            value = check()
        except httpx.HTTPError:
            value = None
        if value:
            return value
        time.sleep(1)
    pytest.fail(f"timed out after {seconds:.0f}s waiting for {what}\n{tail(log)}")


def tail(log: Path, lines: int = 60) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""


@pytest.fixture
def airflow_server(fresh_db: str, tmp_path: Path) -> Iterator[tuple[Airflow, subprocess.Popen[bytes], Path]]:
    home = tmp_path / "airflow-home"
    home.mkdir()
    (home / "passwords.json").write_text(json.dumps({"admin": PASSWORD}))
    port = free_port()
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(ROOT / "plugins"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__PARALLELISM": "2",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(home / "passwords.json"),
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW_CONN_CDC_SOURCE": conn_env(fresh_db),
        "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"}),
        "CDC_BACKFILL_PROGRESS_CONN_ID": "cdc_source",
        "CDC_BACKFILL_SCHEDULES": str(tmp_path / "no-schedules.toml"),
    }
    env.pop("CDC_BACKFILL_SOURCE_URL", None)
    log = tmp_path / "standalone.log"
    with open(log, "wb") as out:
        # its own process group: the scheduler, triggerer and task processes are stopped with it
        proc = subprocess.Popen(
            [sys.executable, "-m", "airflow", "standalone"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    airflow = Airflow(f"http://127.0.0.1:{port}")
    try:
        try:
            wait_for(
                "the API server",
                lambda: airflow.http.get("/api/v2/version").status_code == 200,
                180,
                proc,
                log,
            )
        except pytest.fail.Exception as exc:
            unavailable("Airflow standalone", exc)
        airflow.login()
        yield airflow, proc, log
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        airflow.http.close()


def test_trigger_stop_and_progress_page_on_a_real_airflow(
    airflow_db: str,
    fresh_db: str,
    airflow_server: tuple[Airflow, subprocess.Popen[bytes], Path],
    tmp_path: Path,
) -> None:
    airflow, proc, log = airflow_server
    seed(fresh_db, orders=300, lines=10)
    engine = sa.create_engine(fresh_db)
    with engine.begin() as conn:  # big enough that its snapshot is still running when the stop arrives
        conn.execute(sa.text("CREATE TABLE big (id int PRIMARY KEY, v text)"))
        conn.execute(sa.text("INSERT INTO big SELECT i, md5(i::text) FROM generate_series(1, 400000) i"))
    engine.dispose()

    for dag_id in ("cdc_incremental_snapshot", "cdc_stop_snapshot"):
        wait_for(
            f"{dag_id} parsed",
            lambda d=dag_id: airflow.api("GET", f"/dags/{d}").status_code == 200,
            180,
            proc,
            log,
        )
        assert airflow.api("PATCH", f"/dags/{dag_id}", json={"is_paused": False}).status_code == 200

    common = {
        "source_conn_id": "cdc_source",
        "landing_dir": str(tmp_path / "lake"),
        "state_dir": str(tmp_path / "state"),
    }
    bad = airflow.trigger(
        "cdc_incremental_snapshot", {**common, "collections": ["public\\.orders"], "chunk_size": 0}
    )
    assert bad.status_code == 400, bad.text
    assert airflow.api("GET", "/dags/cdc_incremental_snapshot/dagRuns").json()["total_entries"] == 0

    stopped = airflow.trigger(
        "cdc_incremental_snapshot",
        {**common, "collections": ["public\\.big"], "chunk_size": 10, "verify": False},
    )
    assert stopped.status_code == 200, stopped.text
    stopped_id = stopped.json()["dag_run_id"]

    def big_is_running() -> dict[str, Any] | None:
        r = airflow.http.get("/cdc-backfill/api/progress")
        rows = {row["collection"]: row for row in r.json()["collections"]} if r.status_code == 200 else {}
        big = rows.get("public.big")
        return big if big and big["status"] == "running" and big["chunks"] > 0 else None

    wait_for("the big snapshot to be running", big_is_running, 300, proc, log)
    stop = airflow.trigger(
        "cdc_stop_snapshot", {"collections": ["public\\.big"], "source_conn_id": "cdc_source"}
    )
    assert stop.status_code == 200, stop.text

    ok = airflow.trigger(
        "cdc_incremental_snapshot", {**common, "collections": ["public\\.orders"], "chunk_size": 50}
    )
    assert ok.status_code == 200, ok.text
    ok_id = ok.json()["dag_run_id"]

    runs = [
        ("cdc_stop_snapshot", stop.json()["dag_run_id"]),
        ("cdc_incremental_snapshot", stopped_id),
        ("cdc_incremental_snapshot", ok_id),
    ]
    wait_for(
        "every run to finish",
        lambda: all(airflow.run_state(d, r) in FINISHED for d, r in runs),
        900,
        proc,
        log,
    )

    assert airflow.run_state("cdc_stop_snapshot", stop.json()["dag_run_id"]) == "success"
    ok_tasks = airflow.task_states("cdc_incremental_snapshot", ok_id)
    assert airflow.run_state("cdc_incremental_snapshot", ok_id) == "success", ok_tasks
    assert (
        set(ok_tasks.values()) == {"success"} and ("verify", -1) in ok_tasks and ("reconcile", -1) in ok_tasks
    )

    stopped_tasks = airflow.task_states("cdc_incremental_snapshot", stopped_id)
    assert stopped_tasks[("snapshot", 0)] == "skipped", stopped_tasks
    # nothing after a fully stopped snapshot runs: no drain, no spark-submit, no verify
    assert {
        stopped_tasks[(t, -1)] for t in ("drain", "wait_for_stream", "reconcile", "reread", "verify")
    } == {"skipped"}

    page = airflow.http.get("/cdc-backfill/")
    assert page.status_code == 200 and "public.big" in page.text and "public.orders" in page.text
    rows = {r["collection"]: r for r in airflow.http.get("/cdc-backfill/api/progress").json()["collections"]}
    assert rows["public.orders"]["status"] == "done" and rows["public.orders"]["rows"] == 300
    assert rows["public.big"]["status"] == "stopped" and 0 < rows["public.big"]["rows"] < 400000

    snapshot_log = airflow.log("cdc_incremental_snapshot", ok_id, "snapshot", 0)
    assert "chunk 1: low watermark written" in snapshot_log and "fence written" in snapshot_log
    plugins = {p["name"]: p for p in airflow.api("GET", "/plugins").json()["plugins"]}
    assert plugins["cdc_backfill"]["external_views"][0]["href"] == "/cdc-backfill/"
