"""Landing a stream into the typed event log, transaction-safe across collections.

Events are buffered per collection as CSV rows of their text values (``pg.csvtext``), with their
position, op, timestamp and unchanged columns. ``roll`` writes one log file per collection, then one
*roll manifest* naming those files and the stream position they complete, written whole. Only a
manifest makes files landed: a crash between two collections' files leaves files no manifest names,
which the next writer deletes (their events come again from the source, whose slot was not told), so
no event is lost or landed twice. The landed position is the greatest position of any manifest.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from cdc_backfill.arrowbuf import char_array, int64_array, line_array, names_array, repeated_string
from cdc_backfill.eventlog.buffers import position_key_array
from cdc_backfill.eventlog.counts import COUNTS, event_counts
from cdc_backfill.eventlog.schema import LINE, OP, ORIGIN, POSITION, TS_MS, UNCHANGED, LogVersion
from cdc_backfill.events.positions import position_key
from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.event_log import write_events
from cdc_backfill.landing.layout import LOG_DIR
from cdc_backfill.landing.manifests import commit_roll, remove_unlanded
from cdc_backfill.pg.csvtext import csv_row, text_table

log = logging.getLogger(__name__)


@dataclass
class _Buffer:
    version: LogVersion
    rows: list[bytes] = field(default_factory=list)
    positions: list[tuple[int, ...]] = field(default_factory=list)  # keys made at the roll, in one call
    ops: bytearray = field(default_factory=bytearray)
    ts_ms: list[int | None] = field(default_factory=list)
    unchanged: list[list[str] | None] = field(default_factory=list)
    in_order: bool = True  # positions came in ascending order (a capture's do): no sort at the roll


class LogWriter:
    """Buffers events per collection; ``roll`` lands them and returns the LSN that may be confirmed."""

    def __init__(
        self, landing: Path, origin: str, roll_events: int = 500_000, roll_seconds: float = 30.0
    ) -> None:
        self.landing = lake_path(landing)
        self.origin = origin
        self.roll_events = roll_events
        self.roll_seconds = roll_seconds
        removed = remove_unlanded(self.landing)
        if removed:
            log.warning("removed %d log file(s) of an unfinished roll: their events come again", len(removed))
        self._buffers: dict[str, _Buffer] = {}
        self._events = 0
        self._opened_at = 0.0
        self._last: tuple[int, ...] = ()
        self._moved = False  # advanced past the landed position with no event buffered
        self._done_end_lsn = 0
        self.durable_end_lsn = 0
        self.rolls = 0
        self.files_written = 0
        self.events_written = 0

    def write(
        self,
        collection: str,
        version: LogVersion,
        op: str,
        position: tuple[int, ...],
        values: list[bytes | None],
        ts_ms: int | None = None,
        unchanged: list[str] | None = None,
    ) -> None:
        """One event: ``values`` are the text values of ``version``'s columns (a delete's non-key
        columns as None); a collection described anew mid-roll goes to its new version next roll."""
        self.write_row(collection, version, op, position, csv_row(values), ts_ms, unchanged)

    def write_row(
        self,
        collection: str,
        version: LogVersion,
        op: str,
        position: tuple[int, ...],
        line: bytes,
        ts_ms: int | None = None,
        unchanged: list[str] | None = None,
    ) -> None:
        """``write`` with the values already a CSV line (``pg.tuplecsv``: the capture's hot path)."""
        buf = self._buffers.get(collection)
        if buf is None or (buf.version is not version and buf.version != version):
            if buf is not None and buf.rows:
                raise ValueError(f"{collection} changed its columns inside a roll: roll first")
            buf = self._buffers[collection] = _Buffer(version)
        if not self._events and not self._moved:
            self._opened_at = time.monotonic()
        buf.rows.append(line)
        buf.positions.append(position)
        buf.ops += op.encode()
        buf.ts_ms.append(ts_ms)
        buf.unchanged.append(unchanged)
        self._events += 1
        if position >= self._last:
            self._last = position
        else:
            buf.in_order = False  # sorted at the roll

    def advance(self, position: tuple[int, ...]) -> None:
        """The stream reached ``position`` without an event to land (a logical decoding message, such as
        the fence the Airflow sensor waits for): the next roll's manifest says so, even with no event."""
        if position > self._last:
            if not self._events and not self._moved:
                self._opened_at = time.monotonic()
            self._last = position
            self._moved = True

    def commit_done(self, end_lsn: int) -> None:
        self._done_end_lsn = end_lsn
        if not self._events and not self._moved:
            self.durable_end_lsn = max(self.durable_end_lsn, end_lsn)  # nothing buffered: safe to confirm

    def has(self, collection: str) -> bool:
        """Events of this collection wait in the current roll."""
        buf = self._buffers.get(collection)
        return buf is not None and bool(buf.rows)

    @property
    def due(self) -> bool:
        return (self._events > 0 or self._moved) and (
            self._events >= self.roll_events or time.monotonic() - self._opened_at >= self.roll_seconds
        )

    def roll(self) -> int:
        """Land every buffered event (one file per collection, then the manifest)."""
        if not self._events and not self._moved:
            return self.durable_end_lsn
        root = self.landing / LOG_DIR
        files, counts = [], {}
        for collection, buf in self._buffers.items():
            if not buf.rows:
                continue
            path = write_events(self.landing, collection, buf.version, self._table(buf), buf.in_order)
            if path is not None:
                files.append(path.relative_to(root).as_posix())
                counts[collection] = event_counts(bytes(buf.ops), buf.unchanged)
        manifest = {"files": files, "position": list(self._last), "events": self._events, COUNTS: counts}
        commit_roll(self.landing, position_key(self._last), manifest)
        log.info("landed %s events of %s collection(s) up to %s", self._events, len(files), list(self._last))
        self.events_written += self._events
        self.rolls += 1
        self.files_written += len(files)
        self._buffers = {c: _Buffer(b.version) for c, b in self._buffers.items()}
        self._events = 0
        self._moved = False
        self.durable_end_lsn = max(self.durable_end_lsn, self._done_end_lsn)
        return self.durable_end_lsn

    def abandon(self) -> None:
        """Drop what is buffered (not confirmed: it comes again)."""
        self._buffers = {c: _Buffer(b.version) for c, b in self._buffers.items()}
        self._events = 0
        self._moved = False

    def _table(self, buf: _Buffer) -> pa.Table:
        rows = text_table(b"".join(buf.rows), buf.version.columns)
        n = rows.num_rows
        if len(buf.ops) != n:  # ops are one byte each: c, u, d, r, t
            raise ValueError(f"{len(buf.ops)} op bytes for {n} events: an op is one of c, u, d, r, t")
        meta = pa.table({
            POSITION: position_key_array(buf.positions),
            OP: char_array(bytes(buf.ops)),
            TS_MS: int64_array(buf.ts_ms),
            UNCHANGED: names_array(buf.unchanged),
            ORIGIN: repeated_string(self.origin, n),
            LINE: line_array(n),
        })  # fmt: skip
        for name in rows.column_names:
            meta = meta.append_column(name, rows.column(name))
        return meta
