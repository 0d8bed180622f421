"""Stream files in the landing zone: written to a temporary name, fsynced, renamed, the folder fsynced.

A finished file is named by the stream positions it holds, ``cdc-<first commit>-<last commit>-<last
lsn>.jsonl`` (16 hex digits each), so the landing zone itself says how far the stream has landed. On
restart the capture skips every event at or before that position: a transaction that was landed but
not yet confirmed to the server, and is therefore sent again, is not written twice.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
import uuid
from pathlib import Path

from cdc_backfill.eventlog.writer import landed_log_position
from cdc_backfill.files import fsync_dir
from cdc_backfill.layout import stream_dir, stream_file_name, stream_file_position

log = logging.getLogger(__name__)


def landed_position(folder: Path) -> tuple[int, int]:
    """The greatest (commit lsn, lsn) landed: in finished stream files or a roll manifest of the typed
    log; (0, 0) for an empty landing zone."""
    logged = landed_log_position(folder)
    best = (logged[0], logged[1]) if len(logged) >= 2 else (0, 0)
    stream = stream_dir(folder)
    if stream.is_dir():
        for entry in os.scandir(stream):
            position = stream_file_position(entry.name)
            if position is not None:
                best = max(best, position)
    return best


class LandingWriter:
    """Appends event lines to the current stream file and rolls it by size and age.

    ``write`` takes a line and the event's position; ``commit_done`` marks a transaction boundary.
    ``roll`` makes the file durable and returns the end LSN of the last transaction wholly inside
    finished files: only that may be confirmed to the server.
    """

    def __init__(self, folder: Path, roll_bytes: int = 64 << 20, roll_seconds: float = 60.0) -> None:
        self.stream = stream_dir(folder)
        self.stream.mkdir(parents=True, exist_ok=True)
        # Left-over partial files of a crashed run hold nothing confirmed: their events come again.
        for stale in self.stream.glob(".cdc-*.part"):
            stale.unlink()
        self.roll_bytes = roll_bytes
        self.roll_seconds = roll_seconds
        self._fh = None
        self._tmp: Path | None = None
        self._bytes = 0
        self._opened_at = 0.0
        self._first: tuple[int, int] | None = None
        self._last_commit = 0
        self._last_lsn = 0
        self._done_end_lsn = 0  # end LSN of the last transaction whose commit is in the current file
        self.durable_end_lsn = 0  # end LSN of the last transaction wholly in finished files
        self.files_written = 0
        self.events_written = 0

    def write(self, line: bytes, commit_lsn: int, lsn: int) -> None:
        if self._fh is None:
            self._tmp = self.stream / f".cdc-{uuid.uuid4().hex}.jsonl.part"
            self._fh = open(self._tmp, "wb", buffering=1 << 20)
            self._opened_at = time.monotonic()
            self._first = (commit_lsn, lsn)
        self._fh.write(line)
        self._bytes += len(line)
        self._last_commit = commit_lsn
        self._last_lsn = lsn
        self.events_written += 1

    def commit_done(self, end_lsn: int) -> None:
        self._done_end_lsn = end_lsn
        if self._fh is None:
            # an empty transaction (or one with nothing captured): nothing to land, safe to confirm
            self.durable_end_lsn = max(self.durable_end_lsn, end_lsn)

    @property
    def due(self) -> bool:
        return self._fh is not None and (
            self._bytes >= self.roll_bytes or time.monotonic() - self._opened_at >= self.roll_seconds
        )

    def roll(self) -> int:
        """Finish the current file (if any) durably; return the LSN that may now be confirmed."""
        if self._fh is None or self._tmp is None or self._first is None:
            return self.durable_end_lsn
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        final = self.stream / stream_file_name(self._first[0], self._last_commit, self._last_lsn)
        os.replace(self._tmp, final)
        fsync_dir(self.stream)
        log.info("landed %s (%s bytes)", final.name, self._bytes)
        self.files_written += 1
        self._fh, self._tmp, self._bytes, self._first = None, None, 0, None
        self.durable_end_lsn = max(self.durable_end_lsn, self._done_end_lsn)
        return self.durable_end_lsn

    def abandon(self) -> None:
        """Drop the unfinished file (its events were not confirmed and will come again)."""
        if self._fh is not None:
            self._fh.close()
            if self._tmp is not None:
                with contextlib.suppress(FileNotFoundError):
                    self._tmp.unlink()
        self._fh = None
