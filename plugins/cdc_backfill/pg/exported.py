"""A snapshot of the source at an exact stream position (PostgreSQL).

A temporary logical replication slot created with ``EXPORT_SNAPSHOT`` gives both at once: the slot's
consistent point P, and the name of a snapshot that sees exactly the transactions whose commit record
starts before P (those logical decoding would not send; our positions are (commit LSN, LSN), so: every
event whose commit LSN is below P). A transaction that imports the snapshot reads the source as of P,
however long it takes and whatever writers do meanwhile. The snapshot can be imported until the
replication connection that exported it runs another command; the slot goes with the connection.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from cdc_backfill.events.positions import pg_lsn
from cdc_backfill.pg.conninfo import libpq_dsn

_SNAPSHOT_NAME = re.compile(r"^[0-9A-Fa-f-]+$")


class ExportError(RuntimeError):
    """The source cannot give a snapshot at an exact position (the message says why and what to do)."""


@dataclass(frozen=True)
class ExportedSnapshot:
    position: int  # P: the commit LSN below which every transaction is in the snapshot
    name: str  # for SET TRANSACTION SNAPSHOT

    @property
    def lsn(self) -> str:
        """P as the server writes LSNs."""
        return f"{self.position >> 32:X}/{self.position & 0xFFFFFFFF:X}"

    def import_statement(self) -> str:
        """The first statement of a REPEATABLE READ transaction that reads as of P."""
        if not _SNAPSHOT_NAME.fullmatch(self.name):
            raise ExportError(f"unexpected snapshot name from the server: {self.name!r}")
        return f"SET TRANSACTION SNAPSHOT '{self.name}'"


def slot_command(name: str) -> str:
    """The replication command that creates the temporary slot and exports its snapshot (pure)."""
    if not re.fullmatch(r"[a-z0-9_]{1,63}", name):
        raise ValueError(f"not a replication slot name: {name!r}")
    return f"CREATE_REPLICATION_SLOT {name} TEMPORARY LOGICAL pgoutput EXPORT_SNAPSHOT"


@contextmanager
def exported_snapshot(url: str) -> Iterator[ExportedSnapshot]:
    """Hold a snapshot of the source at an exact position while the block imports it."""
    import psycopg2
    import psycopg2.extras

    try:
        conn = psycopg2.connect(
            libpq_dsn(url, replication=True), connection_factory=psycopg2.extras.LogicalReplicationConnection
        )
    except psycopg2.Error as exc:
        raise ExportError(f"no replication connection to the source: {_first_line(exc)}") from None
    try:
        cur = conn.cursor()
        try:
            cur.execute(slot_command(f"cdc_verify_{uuid.uuid4().hex[:16]}"))
            _slot, point, name, _plugin = cur.fetchone()
        except psycopg2.Error as exc:
            raise ExportError(
                f"the source cannot export a snapshot at a position: {_first_line(exc)} (it needs "
                "wal_level=logical, a free replication slot and a role with REPLICATION, as the capture does)"
            ) from None
        yield ExportedSnapshot(pg_lsn(point), name)
    finally:
        conn.close()  # the temporary slot goes with it


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "pgerror", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
