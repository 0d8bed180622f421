"""Rounds of a capture that follows its source: one round now (``--drain``), or one every ``interval``
seconds until SIGTERM or SIGINT (``--follow``), the round under way always finished first: a round
stopped halfway would land nothing, and read its records again next time. A round that failed on the
way to its source (a broker restarting) lands nothing either: ``--follow`` tries again at the next
round, until ``patience`` seconds have passed without one landing."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

from cdc_backfill.kafka.topics import BROKER_PATIENCE_S

log = logging.getLogger(__name__)

ADDED = ("events", "files", "quarantined", "records")


class Rounds:
    """Iterate for each round; :meth:`add` each round's summary into :attr:`total`."""

    def __init__(self, interval: float | None, patience: float = BROKER_PATIENCE_S) -> None:
        self.interval = interval
        self.patience = patience
        self._landed_at = time.monotonic()  # the last round that did what it was asked
        self.total: dict[str, Any] = {"rounds": 0, "events": 0, "records": 0, "files": 0, "quarantined": 0}
        self.total["collections"] = {}
        self._stop = threading.Event()

    def __iter__(self) -> Iterator[int]:
        if self.interval is None:
            yield 0
            return
        previous = {s: signal.signal(s, lambda *_: self._stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            n = 0
            while not self._stop.is_set():
                yield n
                n += 1
                self._stop.wait(self.interval)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def stop(self) -> None:
        self._stop.set()

    def retry(self, exc: BaseException, why: str) -> None:
        """A round failed on the way to its source (``why``: in one line): raises ``exc`` again unless
        following, and then only once ``patience`` seconds have passed without a round landing."""
        waited = time.monotonic() - self._landed_at
        if self.interval is None or waited > self.patience:
            raise exc
        log.warning("%s; trying again (%.0f of %.0f s without a round)", why, waited, self.patience)

    def add(self, summary: dict[str, Any]) -> None:
        self._landed_at = time.monotonic()
        self.total["rounds"] += 1
        for k in ADDED:
            self.total[k] += summary.get(k, 0)
        for name, counts in summary.get("collections", {}).items():
            mine = self.total["collections"].setdefault(name, {"events": 0, "files": 0})
            mine["events"] += counts.get("events", 0)
            mine["files"] += counts.get("files", 0)
        for k in ("topics", "skipped_lost_offsets", "run"):
            if k in summary:
                self.total[k] = summary[k]
