"""Fences: transactional logical-decoding messages written into the stream, to know when a landing
zone holds everything committed before a moment (the Airflow sensor after a snapshot, verify at a
position). The typed capture lands no event for a fence: it only moves the landed position past it (a roll
manifest with no file); the JSON capture lands it as a line of its own transaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdc_backfill.signals.marks import FENCE_PREFIX

if TYPE_CHECKING:
    import sqlalchemy as sa


def emit_fence(sa_engine: sa.Engine, label: str) -> int:
    """Write a fence, committed now, after everything this process committed before. Returns the
    message's LSN."""
    import sqlalchemy as sa

    from cdc_backfill.events.positions import pg_lsn

    with sa_engine.begin() as conn:
        lsn = conn.execute(
            sa.text("SELECT pg_logical_emit_message(true, :p, :m)::text"), {"p": FENCE_PREFIX, "m": label}
        ).scalar_one()
    return pg_lsn(lsn)


def stream_passed(landed: tuple[int, ...], fence_lsn: int) -> bool:
    """Has the landed stream passed a fence?

    ``fence_lsn`` is what ``pg_logical_emit_message`` returned: the end of the message record, which is
    where the fence's commit record starts (the commit LSN the capture records, and names its files by).
    A landed commit at or beyond it is the fence's or a later one, and the capture lands transactions in
    commit order: everything committed before the fence has landed.
    """
    return bool(landed) and landed[0] >= fence_lsn
