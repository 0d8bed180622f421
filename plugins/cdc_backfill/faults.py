"""Fault injection for the crash tests: an environment variable names a step, and the process kills
itself (SIGKILL) there, so a test can show that a restart loses and duplicates nothing. Each writer
has its variable: the capture's, the snapshot engine's (``step[:chunk number]``), the reconcile's and
the ingest's."""

from __future__ import annotations

import logging
import os
import signal

log = logging.getLogger(__name__)

RECONCILE_CRASH_ENV = "CDC_BACKFILL_RECONCILE_CRASH_AT"
# an ingest's (``ingest`` and ``capture kafka``): ``before-manifest`` (its log files written, not yet
# named) or ``after-manifest``
INGEST_CRASH_ENV = "CDC_BACKFILL_INGEST_CRASH_AT"


def crash_point(env: str, step: str, n: int | None = None) -> None:
    """Die here if ``$env`` is ``step`` (or ``step:n`` for the ``n``-th time a caller counts)."""
    want = os.environ.get(env)
    if not want:
        return
    name, _, at = want.partition(":")
    if name == step and (not at or n is None or int(at) == n):
        log.warning("fault injection: killing myself at %s%s", step, f" ({n})" if n is not None else "")
        os.kill(os.getpid(), signal.SIGKILL)
