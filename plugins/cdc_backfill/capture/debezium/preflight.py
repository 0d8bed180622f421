"""What ``capture debezium`` checks before it starts the JVM, and what ``status`` reports.

Debezium meets a missing signal table, a table without a key or ``wal_level=replica`` with a long log
and, for some of them, keeps running without ever snapshotting. Each is asked of the source here first
and refused in one line that says what to do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa

from cdc_backfill.capture.binding import SlotBindingError, check_binding, forget_binding, record_binding
from cdc_backfill.capture.debezium.batch_files import next_offset, waiting_batches
from cdc_backfill.capture.debezium.connector import (
    CaptureSummary,
    DebeziumCapture,
    DebeziumRefused,
)
from cdc_backfill.capture.debezium.drain import pg_marker_writer
from cdc_backfill.capture.debezium.jvm import debezium_available
from cdc_backfill.capture.debezium.settings import DebeziumSettings, connector_of, offsets_file
from cdc_backfill.capture.publication import slot_exists
from cdc_backfill.config import mask_url, source_engine
from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.layout import debezium_dir
from cdc_backfill.landing.notifications import read_notifications, snapshot_outcomes

SIGNAL_COLUMNS = ("id", "type", "data")  # Debezium reads a signal row's first three columns as these


def preflight(s: DebeziumSettings) -> None:
    """Refuse what the connector would fail on or silently ignore (PostgreSQL: asked live; the other
    sources' drivers are the connector's own, inside the JVM)."""
    if connector_of(s.url) != "postgresql":
        return
    sa_engine = source_engine(s.url)
    try:
        with sa_engine.connect() as conn:
            wal = conn.execute(sa.text("SHOW wal_level")).scalar()
            slot_there = slot_exists(conn, s.slot)
            inspector = sa.inspect(conn)
            _check_signal_table(inspector, s.signal_table)
            for coll in s.collections:
                _check_collection(inspector, coll)
        if not slot_there and offsets_file(s.landing, s.name).exists():
            raise DebeziumRefused(
                f"the replication slot {s.slot} is gone but {s.landing} holds the connector's offsets: "
                "changes since its last run are lost to the stream. Re-snapshot what you need into a new "
                f"landing zone, or remove {offsets_file(s.landing, s.name)} to start the stream from now"
            )
        if wal != "logical":
            raise DebeziumRefused(
                f"the source runs with wal_level={wal}: Debezium's PostgreSQL connector needs logical "
                "(ALTER SYSTEM SET wal_level = logical, then restart the server)"
            )
        _bind(sa_engine, s, slot_there)
    except sa.exc.OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0]
        raise DebeziumRefused(f"cannot reach {mask_url(s.url)}: {reason}") from None
    finally:
        sa_engine.dispose()


def start(
    s: DebeziumSettings,
    *,
    drain: bool,
    until_snapshots: tuple[str, ...] = (),
    stop_on_signals: bool = False,
    max_seconds: float | None = None,
    lands: bool = True,
) -> CaptureSummary:
    """Debezium's connector run as every caller runs it (the CLI, the Airflow hook): refused in one line
    when its engine is missing, when a drain is asked of a source with no logical decoding messages to
    mark its end, or by :func:`preflight`; then run until drained (``drain``) or stopped. ``lands``:
    see :class:`DebeziumCapture`."""
    capture = DebeziumCapture(s, lands=lands)  # its settings are checked first (DebeziumConfigError)
    if drain and connector_of(s.url) != "postgresql":
        raise DebeziumRefused(
            "--drain marks the end with a PostgreSQL logical decoding message; for a "
            f"{connector_of(s.url)} source run --follow (stop it with SIGTERM)"
        )
    missing = debezium_available()
    if missing:
        raise DebeziumRefused(missing)
    preflight(s)
    return capture.run(
        drain=drain,
        emit_marker=pg_marker_writer(s.url) if drain else None,
        until_snapshots=until_snapshots,
        stop_on_signals=stop_on_signals,
        max_seconds=max_seconds,
    )


def _bind(sa_engine: sa.Engine, s: DebeziumSettings, slot_exists: bool) -> None:
    """The connector's slot belongs to this landing zone (``capture.binding``), checked and recorded
    before the connector creates or takes the slot."""
    schema, _ = _split(s.signal_table)
    try:
        with sa_engine.begin() as conn:
            if not slot_exists:
                forget_binding(conn, s.slot, schema)  # the name is free for this landing
            source = check_binding(conn, s.landing, s.slot, schema)
            record_binding(conn, s.landing, s.slot, schema, source)
    except SlotBindingError as exc:
        raise DebeziumRefused(str(exc)) from None


def _split(name: str) -> tuple[str, str]:
    schema, _, table = name.rpartition(".")
    return schema or "public", table


def _check_signal_table(inspector: Any, signal_table: str) -> None:
    schema, table = _split(signal_table)
    if not inspector.has_table(table, schema=schema):
        raise DebeziumRefused(
            f"the signal table {signal_table} does not exist: create it with `cdc-backfill signal init` "
            "(Debezium would start and never see a signal)"
        )
    names = tuple(c["name"] for c in inspector.get_columns(table, schema=schema))
    if names[:3] != SIGNAL_COLUMNS:
        raise DebeziumRefused(
            f"the signal table {signal_table} starts with columns {', '.join(names[:3])}: Debezium reads a "
            f"signal's first three columns as {', '.join(SIGNAL_COLUMNS)} (create it with `cdc-backfill signal init`)"
        )


def _check_collection(inspector: Any, collection: str) -> None:
    schema, table = _split(collection)
    if not inspector.has_table(table, schema=schema):
        raise DebeziumRefused(f"no table {collection} in the source: name it as schema.table")
    if not inspector.get_pk_constraint(table, schema=schema).get("constrained_columns"):
        raise DebeziumRefused(
            f"{collection} has no primary key: Debezium's incremental snapshot reads a table in key "
            "order (add a primary key, or give message.key.columns with --property)"
        )


def debezium_status(landing: Path, url: str | None = None, slot: str | None = None) -> dict[str, Any]:
    """What the landing holds from ``capture debezium``, the snapshots Debezium reported, and (with a
    PostgreSQL source) its slot."""
    landing = lake_path(landing)
    waiting = waiting_batches(landing)
    out: dict[str, Any] = {
        "landing": str(landing),
        "records landed": next_offset(landing),
        "files to ingest": len(waiting),
        "offsets": "stored" if any(debezium_dir(landing).glob("*.offsets")) else "none yet",
    }
    notes = read_notifications(landing)
    last = {str(n.get("id")): str(n.get("type", "")).lower() for n in notes}
    last.update({k: v.lower() for k, v in snapshot_outcomes(notes).items()})
    out["snapshots"] = last or "none reported"
    if url and slot and connector_of(url) == "postgresql":
        from cdc_backfill.capture.postgres.slot_status import capture_status

        out.update({f"slot {k}": v for k, v in capture_status(url, None, slot).items() if k != "slot"})
        out["slot"] = slot
    return out
