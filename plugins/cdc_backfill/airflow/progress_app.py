"""The progress page: each collection's snapshot progress from the engine's progress records, served by
Airflow's API server as a plugin FastAPI app (``/cdc-backfill/``) and shown in the UI as an external view.

``GET /`` is the HTML page, ``GET /api/progress`` the same as JSON. Both need the same login as the
rest of Airflow's UI and API (the UI's session cookie or a bearer token); a caller cannot choose which
connection the server opens: it is ``CDC_BACKFILL_PROGRESS_CONN_ID`` in the API server's environment,
else the default source connection (``cdc_source``, else the project's configured source).
Reads only (the progress and signal status tables); imports neither Spark nor the engine.
"""

from __future__ import annotations

import asyncio
import html
import os
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse

from cdc_backfill.airflow.defaults import default_source_conn_id
from cdc_backfill.snapshot.status import CollectionStatus, summarize

PREFIX = "/cdc-backfill"
CONN_ENV = "CDC_BACKFILL_PROGRESS_CONN_ID"

app = FastAPI(title="cdc_backfill snapshot progress")


def progress_conn_id() -> str:
    """The connection the page reads: set by whoever runs the API server, never by a caller."""
    return os.environ.get(CONN_ENV) or default_source_conn_id()


def read_statuses() -> list[CollectionStatus]:
    from cdc_backfill.airflow.hooks import CdcSourceHook

    hook = CdcSourceHook(progress_conn_id())
    return summarize(hook.progress_ranges(), paused=hook.paused_signals())


async def require_login(request: Request) -> None:
    """Airflow's own check of the UI's session cookie or a bearer token (401 without either)."""
    from airflow.api_fastapi.core_api.security import bearer_scheme, get_user

    await get_user(request, None, await bearer_scheme(request))


def error_text(exc: Exception) -> str:
    """What the page says when it cannot read the progress: what to set, and where (pure)."""
    from cdc_backfill.airflow.hooks import SourceNotConfigured
    from cdc_backfill.config import mask_url

    where = (
        f"the page reads the connection {progress_conn_id()!r} (set {CONN_ENV} in the API server's "
        "environment to read another)"
    )
    if isinstance(exc, SourceNotConfigured):
        return f"cannot read the progress: {exc}; {where}"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"cannot read the progress: {type(exc).__name__}: {mask_url(first)}; {where}"


def as_rows(statuses: list[CollectionStatus]) -> list[dict[str, Any]]:
    """Newest signal first; per collection its status, counts and the percentage done (pure)."""
    out = []
    for s in sorted(statuses, key=lambda s: (s.signal_id, s.collection), reverse=True):
        row = s.to_dict()
        row["percent"] = 100.0 if s.rows_estimate <= 0 else round(min(1.0, s.rows / s.rows_estimate) * 100, 1)
        out.append(row)
    return out


def render_page(rows: list[dict[str, Any]], error: str | None = None) -> str:
    """The HTML page (pure): one table row per collection of each signal."""
    esc = html.escape
    body = []
    for r in rows:
        left = f"{r['seconds_left']:,.0f} s" if r["seconds_left"] is not None else ""
        body.append(
            "<tr>"
            f"<td>{esc(r['signal_id'])}</td><td>{esc(r['collection'])}</td>"
            f"<td class='{esc(r['status'])}'>{esc(r['status'])}</td>"
            f"<td><progress max='100' value='{r['percent']}'></progress> {r['percent']:.1f}%</td>"
            f"<td class='n'>{r['rows']:,}</td><td class='n'>{r['rows_estimate']:,}</td>"
            f"<td class='n'>{r['chunks']:,}</td><td class='n'>{r['rate']:,.0f}</td><td class='n'>{left}</td>"
            f"<td>{esc(r['reason'] or '')}</td>"
            "</tr>"
        )
    empty = "" if error else "<tr><td colspan='10'>no snapshots yet</td></tr>"
    table = (
        "<table><thead><tr><th>signal</th><th>collection</th><th>status</th><th>progress</th><th>rows</th>"
        "<th>estimate</th><th>chunks</th><th>rows/s</th><th>left</th><th>reason</th></tr></thead><tbody>"
        + ("".join(body) or empty)
        + "</tbody></table>"
    )
    problem = f"<p class='error'>{esc(error)}</p>" if error else ""
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>cdc_backfill snapshots</title>"
        "<meta http-equiv='refresh' content='10'>"
        "<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse}"
        "td,th{padding:4px 8px;border-bottom:1px solid #ddd;text-align:left}.n{text-align:right}"
        ".failed,.error{color:#b00}.done{color:#070}.stopped{color:#a60}</style></head><body>"
        f"<h2>Snapshot progress</h2>{problem}{table}</body></html>"
    )


async def _rows() -> tuple[list[dict[str, Any]], str | None]:
    try:
        # database reads block: keep them off the API server's event loop
        return as_rows(await asyncio.to_thread(read_statuses)), None
    except Exception as exc:  # the page says what is wrong instead of a bare 500
        return [], error_text(exc)


LOGIN_PAGE = (
    "<!doctype html><html><head><meta charset='utf-8'><title>cdc_backfill snapshots</title></head><body>"
    "<h2>Snapshot progress</h2><p>Log in to Airflow first: <a href='/'>Airflow</a>.</p></body></html>"
)


@app.get("/", response_class=HTMLResponse)
async def page(request: Request) -> HTMLResponse:
    try:
        await require_login(request)
    except HTTPException as exc:
        return HTMLResponse(LOGIN_PAGE, status_code=exc.status_code)
    rows, error = await _rows()
    return HTMLResponse(render_page(rows, error), status_code=200 if error is None else 503)


@app.get("/api/progress")
async def progress(request: Request) -> JSONResponse:
    try:
        await require_login(request)
    except HTTPException as exc:
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)
    rows, error = await _rows()
    if error is not None:
        return JSONResponse({"error": error, "collections": []}, status_code=503)
    return JSONResponse({"collections": rows})


__all__ = ["PREFIX", "app"]
