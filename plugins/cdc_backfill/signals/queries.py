"""What callers holding a connection (Airflow's hook) ask of the signal and status tables.

Each read answers "nothing yet" on a source whose tables were never created, where the signal store's
own commands refuse it (``require_tables``): a task or a page asking before the first signal is not an
error.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import sqlalchemy as sa

from cdc_backfill.signals.model import ENGINE_TYPES, EXECUTE
from cdc_backfill.signals.statuses import ACTIVE, SignalStatus

if TYPE_CHECKING:
    from cdc_backfill.signals.store import SignalView


def table_exists(conn: sa.Connection, table: sa.Table) -> bool:
    return sa.inspect(conn).has_table(table.name, schema=table.schema)


def signal_written(conn: sa.Connection, signal: sa.Table, signal_id: str) -> bool:
    """Whether the signal table holds this id: a retried task's signal does, and is not sent twice."""
    if not table_exists(conn, signal):
        return False
    return conn.execute(sa.select(signal.c.id).where(signal.c.id == signal_id)).first() is not None


def signal_status(conn: sa.Connection, status: sa.Table, signal_id: str) -> tuple[str, str | None] | None:
    """(status, reason) of a signal, or None when nobody has recorded one yet."""
    if not table_exists(conn, status):
        return None
    stmt = sa.select(status.c.status, status.c.reason).where(status.c.signal_id == signal_id)
    row = conn.execute(stmt).first()
    return (row.status, row.reason) if row is not None else None


def window_rows(conn: sa.Connection, signal: sa.Table) -> list[tuple[str, str, str | None]]:
    """Every watermark row of the signal table, ``(id, type, data)``."""
    if not table_exists(conn, signal):
        return []
    stmt = sa.select(signal.c.id, signal.c.type, signal.c.data).where(signal.c.type.in_(ENGINE_TYPES))
    return [(r.id, r.type, r.data) for r in conn.execute(stmt)]


def unfinished_snapshots(views: Iterable[SignalView]) -> dict[str, list[str]]:
    """Execute signals not finished yet (received, accepted, running, paused), with their collections:
    what a stop can still stop (pure)."""
    return {
        v.id: list(v.collections)
        for v in views
        if v.type == EXECUTE and v.status in (SignalStatus.RECEIVED, *ACTIVE)
    }
