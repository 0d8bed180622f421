"""Fault injection for the crash tests: an environment variable names a step, and the process kills
itself (SIGKILL) there, so a test can show that a restart loses and duplicates nothing. Each writer
has its variable: the capture's, the snapshot engine's (``step[:chunk number]``) and the reconcile's."""

from __future__ import annotations

import logging
import os
import signal

log = logging.getLogger(__name__)

RECONCILE_CRASH_ENV = "CDC_BACKFILL_RECONCILE_CRASH_AT"


def crash_point(env: str, step: str, n: int | None = None) -> None:
    """Die here if ``$env`` is ``step`` (or ``step:n`` for the ``n``-th time a caller counts)."""
    want = os.environ.get(env)
    if not want:
        return
    name, _, at = want.partition(":")
    if name == step and (not at or n is None or int(at) == n):
        log.warning("fault injection: killing myself at %s%s", step, f" ({n})" if n is not None else "")
        os.kill(os.getpid(), signal.SIGKILL)
