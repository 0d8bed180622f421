"""The progress page's rows and HTML (pure), and the app answering over HTTP against a real source."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_backfill.airflow.progress_app import as_rows, render_page
from cdc_backfill.snapshot.status import CollectionStatus


def _status(coll: str, status: str, rows: int, estimate: int) -> CollectionStatus:
    return CollectionStatus("sig-1", coll, status, 2, 3, rows, estimate, 10.0, None, None)


def test_rows_carry_the_percentage_and_the_page_escapes_names() -> None:
    rows = as_rows([_status("public.a", "running", 25, 100), _status("public.<b>", "done", 0, 0)])
    assert [(r["collection"], r["percent"]) for r in rows] == [("public.a", 25.0), ("public.<b>", 100.0)]
    page = render_page(rows)
    assert "public.&lt;b&gt;" in page and "<b>" not in page.replace("<body>", "")
    assert "25.0%" in page
    assert "no snapshots yet" in render_page([])
    assert "cannot read" in render_page([], "cannot read the progress: boom")
    assert "no snapshots yet" not in render_page([], "cannot read the progress: boom")


@pytest.mark.pg
def test_the_app_answers_with_each_collections_progress(
    fresh_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from cdc_backfill.airflow import progress_app
    from cdc_backfill.airflow.progress_app import app
    from cdc_backfill.snapshot.engine import SnapshotEngine
    from tests.support.pg import send
    from tests.support.workload import seed

    monkeypatch.setenv("CDC_BACKFILL_SOURCE_URL", fresh_db)
    monkeypatch.delenv("CDC_BACKFILL_PROGRESS_CONN_ID", raising=False)
    client = TestClient(app)
    # Airflow's login first: without a token or the UI's cookie, refused (a live Airflow logs in, in
    # test_airflow_server and the browser test)
    assert client.get("/api/progress").status_code == 401
    assert client.get("/").status_code == 401 and "Log in to Airflow first" in client.get("/").text
    assert client.get("/api/progress", params={"conn_id": "other"}).status_code == 401

    async def logged_in(request: object) -> None:
        return None

    monkeypatch.setattr(progress_app, "require_login", logged_in)
    assert client.get("/api/progress").json() == {"collections": []}  # no engine ever ran here

    seed(fresh_db, orders=100, lines=50)
    sig = send(fresh_db, "public\\.orders", "public\\.lines", chunk_size=40)
    SnapshotEngine(fresh_db, tmp_path / "lake").run()
    rows = {r["collection"]: r for r in client.get("/api/progress").json()["collections"]}
    assert rows["public.orders"]["status"] == "done" and rows["public.orders"]["rows"] == 100
    assert rows["public.lines"]["chunks"] == 2 and rows["public.lines"]["percent"] == 100.0
    page = client.get("/")
    assert page.status_code == 200 and "public.orders" in page.text and sig in page.text

    monkeypatch.setenv("CDC_BACKFILL_SOURCE_URL", "postgresql+psycopg2://nobody@127.0.0.1:1/none")
    broken = client.get("/api/progress")
    assert broken.status_code == 503 and "cannot read the progress" in broken.json()["error"]
    assert "set CDC_BACKFILL_PROGRESS_CONN_ID in the API server's environment" in broken.json()["error"]
    monkeypatch.delenv("CDC_BACKFILL_SOURCE_URL")
    monkeypatch.setenv("CDC_BACKFILL_PROGRESS_CONN_ID", "no_such_conn")
    missing = client.get("/api/progress").json()["error"]
    assert (
        "the Airflow connection 'no_such_conn' is not defined: create it with `airflow connections add"
        in missing
    )
