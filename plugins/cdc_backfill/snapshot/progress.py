"""The engine's progress store: one row per key range of a collection of a signal, in the source database
beside the signal tables, so that the CLI, Airflow and a restarted engine all read the same truth.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cdc_backfill.signals.statuses import UNFINISHED, RangeStatus
from cdc_backfill.signals.tables import PROGRESS_TABLE, utc_now

__all__ = ["PROGRESS_TABLE"]

NULL_RANGE = -1  # the range of rows whose (nullable) chunk column is NULL


# While it reads a collection the engine touches its running ranges this often; a collection with work
# left and nothing touched for STALE_SECONDS has no engine reading it any more (it was killed).
HEARTBEAT_SECONDS = 10.0
STALE_SECONDS = 60.0


def progress_table(schema: str | None) -> sa.Table:
    md = sa.MetaData(schema=schema)
    return sa.Table(
        PROGRESS_TABLE,
        md,
        sa.Column("signal_id", sa.String(42), primary_key=True),
        sa.Column("collection", sa.String(512), primary_key=True),
        sa.Column("range_no", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("status", sa.String(16), nullable=False),  # pending running done stopped failed
        sa.Column("lo", sa.Text),  # JSON list of key texts, exclusive; null: from the start
        sa.Column("hi", sa.Text),  # JSON list of key texts, inclusive: the largest key fixed at the start
        sa.Column("last_key", sa.Text),  # JSON list: the last key landed
        sa.Column("chunks_done", sa.Integer, nullable=False, default=0),
        sa.Column("rows_read", sa.BigInteger, nullable=False, default=0),
        sa.Column("rows_estimate", sa.BigInteger),
        sa.Column("started_at", sa.DateTime),
        sa.Column("updated_at", sa.DateTime),
        sa.Column("reason", sa.String(2048)),
    )


@dataclass(frozen=True)
class RangeProgress:
    signal_id: str
    collection: str
    range_no: int
    status: str
    lo: list[str] | None
    hi: list[str] | None
    last_key: list[str] | None
    chunks_done: int
    rows_read: int
    rows_estimate: int | None
    started_at: dt.datetime | None
    updated_at: dt.datetime | None
    reason: str | None

    @property
    def start_after(self) -> list[str] | None:
        """Where the next chunk of this range starts (exclusive)."""
        return self.last_key if self.last_key is not None else self.lo

    @classmethod
    def from_row(cls, r: Any) -> RangeProgress:
        load = lambda v: None if v is None else json.loads(v)  # noqa: E731
        return cls(
            r.signal_id, r.collection, r.range_no, r.status, load(r.lo), load(r.hi), load(r.last_key),
            r.chunks_done, r.rows_read, r.rows_estimate, r.started_at, r.updated_at, r.reason,
        )  # fmt: skip


class ProgressStore:
    def __init__(self, sa_engine: sa.Engine, schema: str | None) -> None:
        self.sa_engine = sa_engine
        self.table = progress_table(schema)

    def init(self) -> None:
        with self.sa_engine.begin() as conn:
            if not sa.inspect(conn).has_table(self.table.name, schema=self.table.schema):
                self.table.create(conn)

    def ranges(self, signal_id: str | None = None, collection: str | None = None) -> list[RangeProgress]:
        t = self.table
        stmt = sa.select(t).order_by(t.c.signal_id, t.c.collection, t.c.range_no)
        if signal_id is not None:
            stmt = stmt.where(t.c.signal_id == signal_id)
        if collection is not None:
            stmt = stmt.where(t.c.collection == collection)
        with self.sa_engine.connect() as conn:
            return [RangeProgress.from_row(r) for r in conn.execute(stmt)]

    def plan(
        self,
        signal_id: str,
        collection: str,
        ranges: list[tuple[int, list[str] | None, list[str] | None]],
        estimate: int,
    ) -> None:
        """Record the planned ranges ``(range_no, lo, hi)`` of a collection, all in one transaction."""
        per_range = estimate // max(1, len(ranges))
        rows = [
            {
                "signal_id": signal_id,
                "collection": collection,
                "range_no": no,
                "status": RangeStatus.PENDING,
                "lo": None if lo is None else json.dumps(lo),
                "hi": None if hi is None else json.dumps(hi),
                "chunks_done": 0,
                "rows_read": 0,
                "rows_estimate": per_range,
                "updated_at": utc_now(),
            }
            for no, lo, hi in ranges
        ]
        with self.sa_engine.begin() as conn:
            conn.execute(sa.insert(self.table), rows)

    def update(self, p: RangeProgress, *, only_if_active: bool = False, **values: Any) -> None:
        """Update a range. ``only_if_active``: leave a range that was stopped or failed meanwhile (by a
        stop signal applied while this chunk was landing) as it is."""
        t = self.table
        for k in ("lo", "hi", "last_key"):
            if k in values and values[k] is not None:
                values[k] = json.dumps(values[k])
        values["updated_at"] = utc_now()
        stmt = sa.update(t).where(
            t.c.signal_id == p.signal_id, t.c.collection == p.collection, t.c.range_no == p.range_no
        )
        if only_if_active:
            stmt = stmt.where(t.c.status.in_(UNFINISHED))
        with self.sa_engine.begin() as conn:
            conn.execute(stmt.values(**values))

    def heartbeat(self, signal_id: str, collection: str) -> None:
        """The engine still reads this collection: its running ranges' ``updated_at`` is now."""
        t = self.table
        stmt = sa.update(t).where(
            t.c.signal_id == signal_id, t.c.collection == collection, t.c.status == RangeStatus.RUNNING
        )
        with self.sa_engine.begin() as conn:
            conn.execute(stmt.values(updated_at=utc_now()))

    def set_collection(
        self, signal_id: str, collection: str | None, status: str, reason: str | None = None
    ) -> int:
        """Mark every unfinished range of a collection (or of the whole signal) as ``status``."""
        t = self.table
        stmt = sa.update(t).where(t.c.signal_id == signal_id, t.c.status.in_(UNFINISHED))
        if collection is not None:
            stmt = stmt.where(t.c.collection == collection)
        with self.sa_engine.begin() as conn:
            return conn.execute(stmt.values(status=status, reason=reason, updated_at=utc_now())).rowcount
