"""Running Debezium's PostgreSQL connector in tests: its settings for a test database, the drain marker
written through SQLAlchemy, a capture stopped part-way (a restart in the middle of a snapshot)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from cdc_backfill.capture.debezium.connector import CaptureSummary, DebeziumCapture
from cdc_backfill.capture.debezium.drain import pg_marker_writer
from cdc_backfill.capture.debezium.jvm import debezium_available
from cdc_backfill.capture.debezium.settings import DebeziumSettings
from cdc_backfill.events.debezium import follows, schema_line, with_schemas
from cdc_backfill.landing.notifications import read_notifications
from tests.support.pg import plain_url


def require_engine() -> None:
    """Debezium's engine must run here (fails under CI=true, skips elsewhere)."""
    from tests.conftest import unavailable

    reason = debezium_available()
    if reason:
        unavailable("Debezium's embedded engine", reason)


def settings(url: str, landing: Path, collections: tuple[str, ...] = (), **kw: object) -> DebeziumSettings:
    """The connector for a test database: small chunks and no idling between them, so a snapshot of a
    few thousand rows spans many windows and takes seconds."""
    kw.setdefault("chunk_size", 200)
    kw.setdefault("poll_ms", 20)
    return DebeziumSettings(plain_url(url), collections, "public.cdc_signal", landing, **kw)  # type: ignore[arg-type]


def dbz_drain(
    url: str, s: DebeziumSettings, until: tuple[str, ...] = (), limit_s: float = 300
) -> CaptureSummary:
    """A drain that fails, rather than hangs, when Debezium stalls."""
    return DebeziumCapture(s).run(
        drain=True, emit_marker=pg_marker_writer(url), until_snapshots=until, max_seconds=limit_s
    )


def run_until(
    s: DebeziumSettings, done: Callable[[DebeziumCapture], bool], limit_s: float = 120.0
) -> CaptureSummary:
    """Follow until ``done(capture)``, then stop: a connector stopped part-way, right after the batch
    that made ``done`` true (fails after ``limit_s``)."""
    cap = DebeziumCapture(s, after_batch=lambda c: c.stop() if done(c) else None)
    out: list[CaptureSummary] = []
    thread = threading.Thread(target=lambda: out.append(cap.run(drain=False)), daemon=True)
    thread.start()
    give_up = time.monotonic() + limit_s
    while not done(cap) and thread.is_alive():
        assert time.monotonic() < give_up, f"Debezium did not get there in {limit_s:.0f} s"
        time.sleep(0.05)
    cap.stop()
    thread.join(120)
    assert out, "the capture did not end cleanly"
    return out[0]


def run_until_reads(s: DebeziumSettings, reads: int, limit_s: float = 120.0) -> CaptureSummary:
    """Follow until at least ``reads`` records landed, then stop: a connector stopped mid-snapshot."""
    return run_until(s, lambda cap: cap.summary.records >= reads, limit_s)


def run_until_a_chunk(s: DebeziumSettings, sid: str, limit_s: float = 120.0) -> CaptureSummary:
    """Follow until Debezium reported a chunk of snapshot ``sid`` read (IN_PROGRESS), then stop. Its
    batches hold a chunk at most: a batch of its default size could hold the whole snapshot of a small
    table, which would then end before the stop."""
    s = replace(s, extra={**s.extra, "max.batch.size": str(s.chunk_size)})

    def chunk_read(_: DebeziumCapture) -> bool:
        return any(
            n.get("id") == sid and n.get("type") == "IN_PROGRESS" for n in read_notifications(s.landing)
        )

    return run_until(s, chunk_read, limit_s)


def landed_records(landing: Any) -> list[dict]:
    """The records ``capture debezium`` landed in ``stream/``, in order, each key and value in its
    ``{schema, payload}`` wrapper as the converter writes it (a file's schema and ``follows`` lines are
    no records of it)."""
    out = []
    for p in sorted((landing / "stream").glob("dbz-*.jsonl")):
        schemas: dict = {}
        for line in p.read_text().splitlines():
            record = json.loads(line)
            if (defined := schema_line(record)) is not None:
                schemas.update(defined)
            elif follows(record) is None:
                out.append(with_schemas(record, schemas))
    return out


def key_history(landing: Any, collection: str, keys: Any, limit: int = 40) -> str:
    """Every landed record of ``collection`` whose key (or its before/after row's id) is among ``keys``,
    one line each in landing order: what a failing consistency test prints to be understood from its log
    alone (the CI machine and its folders are gone by the time anyone reads it)."""
    wanted = {str(k[0] if isinstance(k, tuple) else k) for k in keys}
    table = collection.split(".")[-1]
    lines = []
    ingested = [*landed_records(landing / "_ingested"), *landed_records(landing)]  # moved there by ingest
    for i, record in enumerate(ingested):
        value = (record.get("value") or {}).get("payload", record.get("value")) or {}
        key = (record.get("key") or {}).get("payload", record.get("key")) or {}
        source = value.get("source") or {}
        if source.get("table") not in (None, table):
            continue
        ids = {str(v) for v in key.values()} | {
            str((value.get(side) or {}).get("id")) for side in ("before", "after") if value.get(side)
        }
        if ids & wanted:
            lines.append(
                f"#{i} op={value.get('op')} key={key} lsn={source.get('lsn')} seq={source.get('sequence')} "
                f"snapshot={source.get('snapshot')} before={value.get('before')} after={value.get('after')}"
            )
    return "\n".join(lines[:limit]) or "(no landed record of those keys)"
