"""Fault injection for the crash tests: ``CDC_BACKFILL_SNAPSHOT_CRASH_AT=step[:chunk number]`` kills the
engine at that step, so a test can show that a restart loses and duplicates nothing."""

from __future__ import annotations

import logging
import os
import signal

log = logging.getLogger(__name__)

CRASH_ENV = "CDC_BACKFILL_SNAPSHOT_CRASH_AT"


def crash_point(step: str, chunk_no: int) -> None:
    want = os.environ.get(CRASH_ENV)
    if not want:
        return
    name, _, at = want.partition(":")
    if name == step and (not at or int(at) == chunk_no):
        log.warning("fault injection: killing myself at %s of chunk %s", step, chunk_no)
        os.kill(os.getpid(), signal.SIGKILL)
