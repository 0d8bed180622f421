"""Checks that a PostgreSQL source can serve as a CDC source: reachable, ``wal_level=logical``, slots."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import sqlalchemy as sa

from cdc_backfill.config import source_engine


@dataclass(frozen=True)
class LogicalReadiness:
    server_version: str
    wal_level: str
    slot_roundtrip: bool  # a pgoutput slot could be created and dropped

    @property
    def ok(self) -> bool:
        return self.wal_level == "logical" and self.slot_roundtrip


def check_logical_decoding(url: str, *, try_slot: bool = True) -> LogicalReadiness:
    """Connect, read the version and ``wal_level``, and create then drop a temporary pgoutput slot."""
    sa_engine = source_engine(url, isolation_level="AUTOCOMMIT", pool_pre_ping=False)
    try:
        with sa_engine.connect() as conn:
            version = conn.execute(sa.text("SHOW server_version")).scalar_one()
            wal_level = conn.execute(sa.text("SHOW wal_level")).scalar_one()
            slot_ok = False
            if try_slot and wal_level == "logical":
                # Slots are created outside a transaction (autocommit) and dropped at once.
                name = f"cdc_doctor_{uuid.uuid4().hex[:12]}"
                conn.execute(
                    sa.text("SELECT pg_create_logical_replication_slot(:n, 'pgoutput')"), {"n": name}
                )
                conn.execute(sa.text("SELECT pg_drop_replication_slot(:n)"), {"n": name})
                slot_ok = True
    finally:
        sa_engine.dispose()
    return LogicalReadiness(str(version), str(wal_level), slot_ok)
