"""Debezium's windows in the signal table (pure): how many it opened and which are still open, and when its
incremental snapshot is taken to be done from successive scans (what the Airflow sensor and trigger wait
on when Debezium is the snapshot engine and its notifications do not reach them). The native engine's
windows, with the same ids, are told apart by their data (``signals.marks.window_data``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from cdc_backfill.signals.model import WINDOW_CLOSE, WINDOW_OPEN, chunk_of

__all__ = ["WindowScan", "WindowWatch", "scan_windows"]


@dataclass(frozen=True)
class WindowScan:
    """Debezium's watermark rows in the signal table at one moment."""

    windows: int  # windows opened so far
    open_ids: tuple[str, ...]  # opened and not closed yet


def scan_windows(rows: Iterable[tuple[str, str, str | None]]) -> WindowScan:
    """Debezium's windows among signal-table rows ``(id, type, data)``.

    The native engine's windows carry ``{"signal": ...}`` in their data and are left out: they are not
    Debezium's. Ids are ``<chunk>-open`` / ``<chunk>-close`` for both.
    """
    opened: set[str] = set()
    closed: set[str] = set()
    for id_, type_, data in rows:
        if type_ not in (WINDOW_OPEN, WINDOW_CLOSE) or _native_window(data):
            continue
        chunk = chunk_of(id_)
        (opened if type_ == WINDOW_OPEN else closed).add(chunk)
    return WindowScan(len(opened), tuple(sorted(opened - closed)))


def _native_window(data: str | None) -> bool:
    if not data:
        return False
    try:
        parsed = json.loads(data)
    except ValueError:
        return False
    return isinstance(parsed, dict) and "signal" in parsed


@dataclass
class WindowWatch:
    """Decides when Debezium's incremental snapshot is done, from successive scans of the signal table.

    Debezium records no "done" in the signal table. What it leaves there depends on its watermarking:
    ``insert_insert`` (its default) leaves one open and one close row per chunk; ``insert_delete``
    deletes each open row at its window's close, so a window is seen only while it is open. The
    snapshot has started once more windows exist than at ``baseline`` (the count when the signal was
    sent; else the first scan) or a window not open at the first scan was seen open; it is taken to be
    done once it started, no window is open, and the scans have not changed for ``quiet_seconds``:
    Debezium opens the next window right after closing one while a snapshot runs. Debezium's own
    notification, where the landing holds it, is exact and comes first (``airflow.triggers``).
    """

    quiet_seconds: float
    baseline: int | None = None
    first: WindowScan | None = None
    last: WindowScan | None = None
    changed_at: float = 0.0
    seen_open: set[str] = field(default_factory=set)  # windows seen open that the first scan did not see

    def observe(self, scan: WindowScan, now: float) -> bool:
        if self.first is None:
            self.first = scan
            self.last = scan
            self.changed_at = now
            if self.baseline is None:
                self.baseline = scan.windows
            return False
        if scan != self.last:
            self.last = scan
            self.changed_at = now
        self.seen_open |= set(scan.open_ids) - set(self.first.open_ids)
        started = scan.windows > (self.baseline or 0) or bool(self.seen_open)
        return started and not scan.open_ids and now - self.changed_at >= self.quiet_seconds
