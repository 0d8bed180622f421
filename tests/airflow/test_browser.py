"""The Airflow UI as people use it, in a real browser: `make airflow`'s Airflow (``cdc-backfill airflow``)
with the project's DAGs against the real PostgreSQL, driven by Debian's Chromium through Playwright.

- every DAG can be triggered with its defaults plus only its truly required fields, through the REST API
  and through the form;
- cdc_incremental_snapshot triggered from the form with only the collections filled (a trailing newline
  included) runs to success, reconcile and verify included, while a writer changes the table throughout;
- a trigger the source refuses (public.nope) fails its validate task with the product's one line, no
  traceback, in the task log;
- a value out of range is refused with a sentence naming the field, not silently changed; a list of
  blanks is refused;
- the progress page shows the snapshot to a logged-in user and refuses a logged-out one;
- `cdc-backfill airflow` prints the URL and the login, serves only the project's DAGs, and stops on Ctrl-C.

Screenshots go to ``.cdc/screenshots/`` (``CDC_BACKFILL_SCREENSHOTS`` elsewhere).
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from cdc_backfill.pg.embedded import free_port
from tests.conftest import ROOT, unavailable
from tests.support.pg import plain_url

pytestmark = [pytest.mark.airflow, pytest.mark.pg, pytest.mark.spark, pytest.mark.slow]

PASSWORD = "browser-test-password"
CHROMIUM = os.environ.get("CDC_BACKFILL_CHROMIUM", "/usr/bin/chromium")
# what this machine's closed network needs (no background connections), as root (no sandbox)
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip
MINIMAL_CONF: dict[str, dict[str, Any]] = {
    "cdc_incremental_snapshot": {"collections": ["public\\.orders"]},
    "cdc_stop_snapshot": {},
    "cdc_capture_postgres": {},
    "cdc_doctor": {},
}


def screenshots() -> Path:
    folder = Path(os.environ.get("CDC_BACKFILL_SCREENSHOTS") or ROOT / ".cdc" / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Api:
    """REST API v2 with a bearer token, as scripts use it."""

    def __init__(self, base: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=30)
        token = self.http.post("/auth/token", json={"username": "admin", "password": PASSWORD})
        token.raise_for_status()
        self.http.headers["Authorization"] = f"Bearer {token.json()['access_token']}"

    def __call__(self, method: str, path: str, **kw: Any) -> httpx.Response:
        return self.http.request(method, f"/api/v2{path}", **kw)

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        return self("GET", f"/dags/{dag_id}/dagRuns").json()["dag_runs"]

    def wait(self, what: str, check: Any, seconds: float) -> Any:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            time.sleep(2)
        pytest.fail(f"timed out after {seconds:.0f}s waiting for {what}")


@pytest.fixture
def airflow_url(fresh_db: str, tmp_path: Path) -> Iterator[str]:
    engine = sa.create_engine(fresh_db)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE orders (id int PRIMARY KEY, status text)"))
        conn.execute(sa.text("INSERT INTO orders SELECT i, 'open' FROM generate_series(1, 3000) i"))
    engine.dispose()
    home = tmp_path / "airflow-home"
    home.mkdir()
    (home / "passwords.json").write_text(json.dumps({"admin": PASSWORD}))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        AIRFLOW_HOME=str(home),
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=str(home / "passwords.json"),
        AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="5",
        # `make airflow` wires cdc_source from the project's source setting
        CDC_BACKFILL_SOURCE_URL=plain_url(fresh_db),
        CDC_BACKFILL_LANDING=str(tmp_path / "lake"),
        CDC_BACKFILL_STATE=str(tmp_path / "state"),
        CDC_BACKFILL_SCHEDULES=str(tmp_path / "no-schedules.toml"),
    )
    env.pop("CDC_BACKFILL_PROGRESS_CONN_ID", None)
    log = tmp_path / "airflow.out"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_backfill.cli", "airflow", "--port", str(port)],
            env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while "ready: " not in log.read_text() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(1)
        if "ready: " not in log.read_text():
            unavailable("Airflow (cdc-backfill airflow)", log.read_text()[-2000:])
        ready = re.search(r"ready: (\S+)  \(log in as admin, password (\S+); kept in", log.read_text())
        assert ready and ready.group(2) == PASSWORD, log.read_text()[-2000:]
        yield ready.group(1).rstrip("/")
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C, as a user of `make airflow` stops it
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert proc.returncode == 0 and "Airflow stopped" in log.read_text(), log.read_text()[-2000:]


def launch_chromium(playwright: Any) -> Any:
    try:
        return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    except Exception as exc:  # no browser, or one that cannot start: fails under CI
        unavailable("Chromium", f"{CHROMIUM}: {str(exc).splitlines()[0]} (apt-get install chromium)")


def login(page: Any, base: str) -> None:
    page.goto(f"{base}/")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"{base}/", timeout=60_000)


def open_form(page: Any, base: str, dag_id: str) -> Any:
    page.goto(f"{base}/dags/{dag_id}")
    page.get_by_role("button", name="Trigger Dag").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_text("Run Parameters").wait_for()
    return dialog


class OrderWriter:
    """Tens of changes a second to ``orders`` (inserts, updates, deletes, key changes) from another
    thread, while the form's run snapshots, reconciles and verifies it."""

    def __init__(self, url: str) -> None:
        self.sa_engine = sa.create_engine(url)
        self.stop_event = threading.Event()
        self.changes = 0
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> OrderWriter:
        self.thread.start()
        return self

    def stop(self) -> int:
        self.stop_event.set()
        self.thread.join(timeout=60)
        self.sa_engine.dispose()
        if self.errors:
            raise self.errors[0]
        return self.changes

    def _loop(self) -> None:
        rng = random.Random(34)
        statements = [
            "UPDATE orders SET status = 'upd' WHERE id = :i",
            "INSERT INTO orders VALUES (:i + 3000, 'new') ON CONFLICT DO NOTHING",
            "DELETE FROM orders WHERE id = :i",
            "UPDATE orders SET id = :i + 6000 WHERE id = :i AND NOT EXISTS (SELECT 1 FROM orders WHERE id = :i + 6000)",
        ]
        try:
            while not self.stop_event.is_set():
                with self.sa_engine.begin() as conn:
                    done = conn.execute(sa.text(rng.choice(statements)), {"i": rng.randint(1, 3000)})
                    self.changes += done.rowcount
                time.sleep(0.03)
        except BaseException as exc:  # raised again by stop()
            self.errors.append(exc)


def test_the_ui_as_people_use_it(airflow_url: str, fresh_db: str) -> None:
    from playwright.sync_api import sync_playwright

    base, shots = airflow_url, screenshots()
    api = Api(base)
    dags = api.wait("the DAGs parsed", lambda: {d["dag_id"]: d for d in api("GET", "/dags").json()["dags"]}
                    if len(api("GET", "/dags").json()["dags"]) >= len(MINIMAL_CONF) else None, 180)  # fmt: skip
    assert set(MINIMAL_CONF) <= set(dags)
    assert all(d.startswith("cdc_") for d in dags), dags  # the project's DAGs, no examples
    assert httpx.get(f"{base}/api/v2/dags", timeout=30).status_code == 401  # the API wants a login
    for dag_id, dag in dags.items():
        assert dag["description"], f"{dag_id} has no description for the DAG list"

    # REST: defaults plus the truly required fields are accepted; the DAGs are paused, so the runs only
    # queue, and are deleted again
    for dag_id, conf in MINIMAL_CONF.items():
        res = api("POST", f"/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf})
        assert res.status_code == 200, (dag_id, res.text)
        assert api("DELETE", f"/dags/{dag_id}/dagRuns/{res.json()['dag_run_id']}").status_code == 204
    blank = api("POST", "/dags/cdc_incremental_snapshot/dagRuns",
                json={"logical_date": None, "conf": {"collections": ["   ", ""]}})  # fmt: skip
    assert blank.status_code == 400 and "Invalid input for param collections" in blank.text

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        page = browser.new_page(viewport={"width": 1400, "height": 1300})
        login(page, base)

        # the form: only the required fields, without unpausing the DAGs that must not run here
        for dag_id in ("cdc_stop_snapshot", "cdc_capture_postgres", "cdc_doctor"):
            dialog = open_form(page, base, dag_id)
            assert dialog.get_by_text("This field is required").count() == 0, dag_id
            unpause = dialog.get_by_label(f"Unpause {dag_id} on trigger")
            dialog.get_by_text(f"Unpause {dag_id} on trigger").click()  # Chakra draws over the input
            assert not unpause.is_checked()
            dialog.get_by_role("button", name="Trigger", exact=True).click()
            page.wait_for_url(re.compile(f"/dags/{dag_id}/runs/"), timeout=30_000)
            [run] = api.runs(dag_id)
            assert api("DELETE", f"/dags/{dag_id}/dagRuns/{run['dag_run_id']}").status_code == 204

        dialog = open_form(page, base, "cdc_incremental_snapshot")
        assert dialog.get_by_text("This field is required").count() == 1  # the collections, nothing else
        page.screenshot(path=str(shots / "01-form-defaults.png"))

        # out of range: refused with a sentence naming the field; the value is not changed behind the user
        dialog.locator("#element_collections").fill("public\\.orders")
        chunk = dialog.locator("input[name=element_chunk_size]")
        chunk.fill("0")
        dialog.locator("#element_condition").click()
        assert chunk.input_value() == "0"
        dialog.get_by_role("button", name="Trigger", exact=True).click()
        refusal = page.get_by_text("Invalid input for param chunk_size: 0 is less than the minimum of 1")
        refusal.first.wait_for(timeout=30_000)
        refusal.first.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / "02-refused-chunk-size-0.png"))
        assert api.runs("cdc_incremental_snapshot") == []

        # only the collections, pasted with a trailing newline, with a writer changing the table all
        # along: the run goes through to verify, which compares both sides at one position
        writer = OrderWriter(fresh_db).start()
        try:
            dialog = open_form(page, base, "cdc_incremental_snapshot")
            dialog.locator("#element_collections").fill("public\\.orders\n")
            dialog.get_by_role("button", name="Trigger", exact=True).click()
            page.wait_for_url(re.compile("/dags/cdc_incremental_snapshot/runs/"), timeout=30_000)
            [run] = api.runs("cdc_incremental_snapshot")
            assert run["conf"]["collections"] == ["public\\.orders", ""] and run["conf"]["condition"] is None
            state = api.wait(
                "the form's run to finish",
                lambda: (s := api("GET", f"/dags/cdc_incremental_snapshot/dagRuns/{run['dag_run_id']}").json()["state"])
                in ("success", "failed") and s,
                600,
            )  # fmt: skip
        finally:
            changes = writer.stop()
        page.reload()
        page.wait_for_timeout(2000)
        page.screenshot(path=str(shots / "03-run-succeeded.png"))
        tis = api("GET", f"/dags/cdc_incremental_snapshot/dagRuns/{run['dag_run_id']}/taskInstances").json()
        assert state == "success", {t["task_id"]: t["state"] for t in tis["task_instances"]}
        assert changes > 100, changes  # the writer really ran through the run

        # a trigger the source refuses: the validate task fails with the product's one line
        dialog = open_form(page, base, "cdc_incremental_snapshot")
        dialog.locator("#element_collections").fill("public\\.nope")
        dialog.get_by_role("button", name="Trigger", exact=True).click()
        page.wait_for_url(re.compile("/dags/cdc_incremental_snapshot/runs/"), timeout=30_000)
        nope = next(
            r for r in api.runs("cdc_incremental_snapshot") if r["conf"]["collections"] == ["public\\.nope"]
        )
        api.wait(
            "the refused run to fail",
            lambda: api("GET", f"/dags/cdc_incremental_snapshot/dagRuns/{nope['dag_run_id']}").json()["state"]
            == "failed",
            300,
        )  # fmt: skip
        page.goto(f"{base}/dags/cdc_incremental_snapshot/runs/{nope['dag_run_id']}/tasks/validate")
        reason = page.get_by_text("refused: ").first
        reason.wait_for(timeout=60_000)
        page.screenshot(path=str(shots / "06-refused-trigger-task-log.png"))
        assert "did you mean public.orders?" in page.content()
        assert "Traceback" not in page.content()

        # the progress page: shown when logged in, refused when not
        shown = page.goto(f"{base}/cdc-backfill/")
        assert shown.status == 200 and "public.orders" in page.content() and ">done<" in page.content()
        page.screenshot(path=str(shots / "04-progress-logged-in.png"))
        stranger = browser.new_context().new_page()
        refused = stranger.goto(f"{base}/cdc-backfill/")
        assert refused.status == 401 and "Log in to Airflow first" in stranger.content()
        stranger.screenshot(path=str(shots / "05-progress-logged-out.png"))
        assert stranger.goto(f"{base}/cdc-backfill/api/progress").status == 401
        browser.close()
