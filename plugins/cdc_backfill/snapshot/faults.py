"""Fault injection for the engine's crash tests: ``CDC_BACKFILL_SNAPSHOT_CRASH_AT=step[:chunk number]``
kills the engine at that step (``cdc_backfill.faults``)."""

from __future__ import annotations

from cdc_backfill import faults

CRASH_ENV = "CDC_BACKFILL_SNAPSHOT_CRASH_AT"


def crash_point(step: str, chunk_no: int) -> None:
    faults.crash_point(CRASH_ENV, step, chunk_no)
