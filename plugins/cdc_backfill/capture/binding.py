"""A replication slot belongs to one landing zone (docs/design.md §6.1).

A slot hands each change out once: a capture that takes a slot's changes into the wrong folder (a typo in
``--landing``) confirms them, and the right landing never receives them. So the binding of a slot to a
landing zone is recorded on both sides, and every capture checks it before it touches the slot:

- in the landing: ``_landing.json`` holds the landing's identity (a UUID that stays when the folder is
  moved) and, per slot, the source it streams from (system identifier, database);
- in the source: the table ``cdc_slot_binding`` beside the signal tables, slot -> landing identity and
  the folder it was bound at (for the message that names it).

A capture into a landing that is not its slot's is refused in one line naming the bound landing and
both ways out; so is a capture into a landing that holds another source's stream. A landing whose slot is gone
(its changes since the last run are lost to the stream) is refused by :func:`check_slot_not_lost`.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from cdc_backfill.capture.publication import CaptureError
from cdc_backfill.files import write_atomically, write_new
from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.layout import landing_meta_file
from cdc_backfill.signals.tables import utc_now

BINDING_TABLE = "cdc_slot_binding"


class SlotBindingError(CaptureError):
    """The landing zone and the slot do not belong together: nothing was streamed or confirmed."""


@dataclass(frozen=True)
class Source:
    """Which server and database a slot streams from."""

    system_identifier: str  # '' when the server does not tell this role (pg_control_system)
    database: str

    def describe(self) -> str:
        return f"database {self.database}" + (
            f" of server {self.system_identifier}" if self.system_identifier else ""
        )


def binding_table(schema: str | None, conn: sa.Connection | None = None) -> sa.Table:
    """The source side's table; created in ``conn``'s database when missing."""
    table = sa.Table(
        BINDING_TABLE,
        sa.MetaData(schema=schema),
        sa.Column("slot", sa.String(64), primary_key=True),
        sa.Column("landing_id", sa.String(36), nullable=False),
        sa.Column("landing", sa.String(2048), nullable=False),  # the folder it was bound at
        sa.Column("system_identifier", sa.String(32)),
        sa.Column("bound_at", sa.DateTime(timezone=False)),
    )
    if conn is not None:
        table.create(conn, checkfirst=True)
    return table


def read_landing_meta(landing: Path) -> dict[str, Any] | None:
    path = landing_meta_file(landing)
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SlotBindingError(f"{path} is not valid JSON ({exc}): restore it from a backup") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
        raise SlotBindingError(f"{path} holds no landing identity: restore it from a backup")
    return doc


def source_of(conn: sa.Connection) -> Source:
    """The server's system identifier (when this role may read it) and the current database."""
    database, allowed = conn.execute(
        sa.text("SELECT current_database(), has_function_privilege('pg_control_system()', 'EXECUTE')")
    ).one()
    sysid = (
        conn.execute(sa.text("SELECT system_identifier::text FROM pg_control_system()")).scalar()
        if allowed
        else None
    )
    return Source(str(sysid or ""), str(database or ""))


def check_binding(conn: sa.Connection, landing: Path, slot: str, schema: str | None) -> Source:
    """Refuse (SlotBindingError) a landing that is not ``slot``'s, or that holds another source's stream
    (one landing zone, one source); returns the source. Creates the binding table when missing, binds nothing."""
    source = source_of(conn)
    table = binding_table(schema, conn)
    row = conn.execute(sa.select(table).where(table.c.slot == slot)).first()
    meta = read_landing_meta(landing)
    for name, bound in (meta or {}).get("slots", {}).items():
        if bound.get("database") != source.database or _other_server(bound, source):
            theirs = Source(str(bound.get("system_identifier") or ""), str(bound.get("database")))
            raise SlotBindingError(
                f"the landing zone {landing} holds the stream of {theirs.describe()} (slot {name}), not of "
                f"this source's {source.describe()}: give that --source, or another --landing for this one"
            )
    if row is not None and (meta is None or row.landing_id != meta["id"]):
        raise SlotBindingError(
            f"slot {slot} belongs to the landing zone {row.landing}, not {lake_path(landing).resolve()}: give "
            f"that landing zone (--landing {row.landing}, or the DAG's landing folder) to go on with it, or, "
            "from the command line, --slot NAME to start a second landing zone with a slot of its own"
        )
    return source


def _other_server(mine: dict[str, Any], source: Source) -> bool:
    theirs = str(mine.get("system_identifier") or "")
    return bool(theirs and source.system_identifier and theirs != source.system_identifier)


def record_binding(conn: sa.Connection, landing: Path, slot: str, schema: str | None, source: Source) -> None:
    """Bind ``slot`` to ``landing`` on both sides (after :func:`check_binding` and once the slot exists):
    the landing first, so that a crash in between leaves a landing that binds again, never a source row
    pointing at a landing that does not know it."""
    existing = read_landing_meta(landing)
    meta = existing or {"id": str(uuid.uuid4()), "slots": {}}
    slots = meta.setdefault("slots", {})
    if slots.get(slot, {}).get("database") != source.database or not slots[slot].get("bound_at"):
        slots[slot] = {
            "system_identifier": source.system_identifier,
            "database": source.database,
            "bound_at": utc_now().isoformat(timespec="seconds"),
        }
        landing.mkdir(parents=True, exist_ok=True)
        data = json.dumps(meta, indent=2).encode()
        if existing is not None:
            write_atomically(landing_meta_file(landing), data)
        elif not write_new(landing_meta_file(landing), data):
            # the landing's identity is made once: two captures binding a new landing at once cannot
            # both make one (a conditional PUT on S3)
            raise SlotBindingError(
                f"another capture bound the landing zone {landing} meanwhile: run this one again, or give "
                "it a landing zone of its own"
            )
    table = binding_table(schema)
    row = conn.execute(sa.select(table.c.landing_id).where(table.c.slot == slot)).first()
    if row is None:
        conn.execute(
            sa.insert(table).values(
                slot=slot,
                landing_id=meta["id"],
                landing=str(landing.resolve()),
                system_identifier=source.system_identifier,
                bound_at=utc_now(),
            )
        )


def check_slot_not_lost(landing: Path, slot: str, slot_exists: bool) -> None:
    """A landing bound to ``slot`` whose slot is gone has lost the changes since its last run: refuse to
    create a new slot silently (the stream would go on from now with a gap)."""
    meta = read_landing_meta(landing)
    if slot_exists or not meta or slot not in meta.get("slots", {}):
        return
    raise SlotBindingError(
        f"the replication slot {slot} is gone but {landing} holds its stream: changes since its last run "
        "are lost to the stream. Capture into a new landing zone and re-snapshot what you need (a new "
        "--landing, or --slot NAME)"
    )


def forget_binding(conn: sa.Connection, slot: str, schema: str | None) -> None:
    """The source side of a binding whose slot is gone: the name is free for a new landing."""
    table = binding_table(schema, conn)
    conn.execute(sa.delete(table).where(table.c.slot == slot))
