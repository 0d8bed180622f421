"""The capture's setup in the source: which tables a publication may hold (a table whose updates and
deletes would fail at the source once published is refused), the publication and the slot."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from cdc_backfill.names import collection_name
from cdc_backfill.names import quote_ident as _ident
from cdc_backfill.pg.catalog import user_tables
from cdc_backfill.pg.refusals import INSUFFICIENT_PRIVILEGE, server_message

DEFAULT_SLOT = "cdc_backfill"
DEFAULT_PUBLICATION = "cdc_backfill"


class CaptureError(RuntimeError):
    """Capture cannot start or go on; the message says why and what to do."""


class SlotInUse(CaptureError):
    """Another process streams from the slot right now: waiting for it may help, retrying at once not."""


@dataclass(frozen=True)
class TableCheck:
    collection: str
    schema: str
    table: str
    has_primary_key: bool
    replica_identity: str  # d, f, i, n


def refusal(t: TableCheck) -> str | None:
    """Why a table cannot be published, or None. Without a key, UPDATE and DELETE would fail at the source."""
    if t.replica_identity == "n":
        return f"{t.collection} has REPLICA IDENTITY NOTHING: its updates and deletes cannot be captured"
    if t.replica_identity == "d" and not t.has_primary_key:
        return (
            f"{t.collection} has no primary key and REPLICA IDENTITY DEFAULT: adding it to a publication would "
            f"make every UPDATE and DELETE on it fail at the source. Add a primary key, or run "
            f"ALTER TABLE {t.collection} REPLICA IDENTITY FULL"
        )
    return None


def list_tables(conn: sa.Connection) -> list[TableCheck]:
    return [
        TableCheck(collection_name(r.schema, r.table), r.schema, r.table, bool(r.has_pk), str(r.identity))
        for r in user_tables(conn)
    ]


def choose_tables(
    tables: Sequence[TableCheck], patterns: Sequence[str] | None, always: Sequence[str]
) -> tuple[list[TableCheck], list[str]]:
    """(tables to publish, warnings). Named tables that cannot be published are refused; tables only
    caught by the default pattern are left out with a warning."""
    chosen: list[TableCheck] = []
    warnings: list[str] = []
    rxs = [re.compile(p) for p in (patterns or [])]
    for t in tables:
        forced = t.collection in always
        named = any(rx.fullmatch(t.collection) for rx in rxs)
        if not (forced or named or not rxs):
            continue
        why = refusal(t)
        if why and (named or forced):
            raise CaptureError(why)
        if why:
            warnings.append(f"left out: {why}")
            continue
        chosen.append(t)
    if rxs:
        for p, rx in zip(patterns or [], rxs, strict=True):
            if not any(rx.fullmatch(t.collection) for t in tables):
                raise CaptureError(f"--collections {p!r} matches no table in the source")
    return chosen, warnings


def ensure_publication(conn: sa.Connection, name: str, tables: Sequence[TableCheck]) -> list[str]:
    """Create the publication or add the missing tables to it; return the tables added."""
    have = {
        (r.schemaname, r.tablename)
        for r in conn.execute(sa.text("SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = :p"), {"p": name})
    }  # fmt: skip
    exists = conn.execute(sa.text("SELECT 1 FROM pg_publication WHERE pubname = :p"), {"p": name}).first()
    missing = [t for t in tables if (t.schema, t.table) not in have]
    names = ", ".join(f"{_ident(t.schema)}.{_ident(t.table)}" for t in missing)
    if not exists:
        statement = f"CREATE PUBLICATION {_ident(name)}" + (f" FOR TABLE {names}" if names else "")
    elif missing:
        statement = f"ALTER PUBLICATION {_ident(name)} ADD TABLE {names}"
    else:
        return []
    try:
        conn.execute(sa.text(statement))
    except sa.exc.ProgrammingError as exc:
        if getattr(exc.orig, "pgcode", None) != INSUFFICIENT_PRIVILEGE:
            raise
        # only the tables' owners (or a superuser) may publish them: they can create it for this role
        raise CaptureError(
            f"this role may not publish {', '.join(t.collection for t in missing)} ({server_message(exc)}): "
            f"run {statement}; as their owner or a superuser, and the capture uses the publication as it is"
        ) from None
    return [t.collection for t in missing]


def slot_exists(conn: sa.Connection, slot: str) -> bool:
    return (
        conn.execute(sa.text("SELECT 1 FROM pg_replication_slots WHERE slot_name = :s"), {"s": slot}).first()
        is not None
    )


def ensure_slot(conn: sa.Connection, slot: str) -> bool:
    """Create the pgoutput slot if missing (autocommit connection); True if created."""
    row = conn.execute(
        sa.text("SELECT plugin FROM pg_replication_slots WHERE slot_name = :s"), {"s": slot}
    ).first()
    if row is not None:
        if row.plugin != "pgoutput":
            raise CaptureError(
                f"slot {slot} exists with plugin {row.plugin}, not pgoutput: choose another --slot"
            )
        return False
    conn.execute(sa.text("SELECT pg_create_logical_replication_slot(:s, 'pgoutput')"), {"s": slot})
    return True
