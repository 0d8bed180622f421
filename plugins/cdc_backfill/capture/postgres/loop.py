"""PostgreSQL capture: one replication loop over pgoutput, landing the typed event log through its sink.

The loop holds the replication connection: it sets up the publication and the slot, streams, decodes
each pgoutput message once (a relation, a row change, a logical decoding message, a commit) and hands
it to its sink (``capture.postgres.log_sink``; what it decodes: ``capture.postgres.changes``), rolls when the sink says a
roll is due and confirms to the slot. This is what ``cdc-backfill capture postgres``, the Airflow hook
and verify's catch-up run. An event's position is (commit LSN, LSN of the change), and the signal table
is in the publication, so the snapshot engine's watermark rows land at their commit position among the
other changes.

Durability: a roll makes the log durable (each collection's file, then the roll manifest naming them)
before the slot is told (``flush_lsn``) that the transactions in them are safe; the slot then never
sends them again. Only the end LSN of a transaction wholly landed is told (the loop rolls between
transactions; a roll inside one, the log's before a new schema version, tells nothing of it). A crash
in between makes the server send them again: the loop skips every event at or before the position the
landing already holds (``TypedLogSink.landed``), so no event is landed twice.
"""

from __future__ import annotations

import logging
import select
import struct
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg2
import psycopg2.extras
import sqlalchemy as sa

from cdc_backfill.capture.postgres.changes import (
    DELETE,
    INSERT,
    KEY_CHANGE,
    TRUNCATE,
    UPDATE,
    SinkOptions,
    Txn,
)
from cdc_backfill.capture.postgres.log_sink import TypedLogSink
from cdc_backfill.capture.postgres.relations import relation_schema, set_up_source
from cdc_backfill.capture.postgres.slot_status import capture_status
from cdc_backfill.capture.postgres.stop import StopSignals
from cdc_backfill.capture.publication import DEFAULT_PUBLICATION, DEFAULT_SLOT, CaptureError, SlotInUse
from cdc_backfill.config import source_engine
from cdc_backfill.faults import crash_point
from cdc_backfill.lakepath import lake_path
from cdc_backfill.pg import pgoutput
from cdc_backfill.pg.conninfo import libpq_dsn
from cdc_backfill.signals.marks import DRAIN_PREFIX

__all__ = [
    "CRASH_ENV",
    "DEFAULT_PUBLICATION",
    "DEFAULT_SLOT",
    "CaptureError",
    "CaptureStats",
    "PostgresCapture",
    "capture_status",
]

log = logging.getLogger(__name__)

# Fault injection for tests: the process kills itself (SIGKILL) at the named step.
CRASH_ENV = "CDC_BACKFILL_CAPTURE_CRASH_AT"
_RELID = struct.Struct(">I")
# How long a stop waits for the rest of the transaction being read before it stops inside it.
STOP_GRACE_SECONDS = 15.0


@dataclass
class CaptureStats:
    transactions: int = 0
    events: int = 0
    skipped: int = 0  # events at or before the landed position (sent again after a restart)
    files: int = 0
    confirmed_lsn: int = 0
    started: float = field(default_factory=time.monotonic)


class PostgresCapture:
    """One capture run: set up publication and slot, stream, hand each decoded message to the sink,
    roll, confirm."""

    def __init__(
        self,
        url: str,
        landing: Path,
        slot: str = DEFAULT_SLOT,
        publication: str = DEFAULT_PUBLICATION,
        collections: Sequence[str] | None = None,
        signal_table: str | None = None,
        roll_bytes: int = 64 << 20,
        roll_seconds: float = 30.0,
    ) -> None:
        self.url = url
        self.landing = lake_path(landing)
        self.slot = slot
        self.publication = publication
        self.patterns = list(collections) if collections else None
        self.signal_table = signal_table
        self.stats = CaptureStats()
        self.sa_engine = source_engine(url, isolation_level="AUTOCOMMIT")
        self.sink = TypedLogSink(
            SinkOptions(self.landing, slot, roll_bytes, roll_seconds)
        )  # opened by run(), once setup() found the landing the slot's
        self._relations: dict[int, Any] = {}  # relid -> the sink's LogRelation
        self._stop_at: float | None = None  # when the first stop was asked for; None: none was
        self._signals: StopSignals | None = None  # while following: SIGTERM and SIGINT ask for a stop
        self._skip_to = self.sink.landed()

    def setup(self) -> list[str]:
        """Publication (the chosen tables and the signal table) and slot; returns warnings."""
        return set_up_source(self.sa_engine, self.url, self.landing, self.slot, self.publication,
                             self.patterns, self.signal_table)  # fmt: skip

    # ------------------------------------------------------------ the loop

    def request_stop(self) -> None:
        """The first stop lets the transaction being read commit (within ``STOP_GRACE_SECONDS``), a
        second one stops now; what is not landed comes again either way."""
        now = time.monotonic()
        self._stop_at = now if self._stop_at is None else now - STOP_GRACE_SECONDS - 1

    @property
    def stopping(self) -> bool:
        """A stop was asked for."""
        return self._stop_at is not None

    def _poll_signals(self) -> None:
        if self._signals is not None:
            for _ in range(self._signals.received()):
                self.request_stop()

    def _stop_overdue(self) -> bool:
        """A stop was asked for longer ago than the grace a transaction's rest is given."""
        return self._stop_at is not None and time.monotonic() - self._stop_at > STOP_GRACE_SECONDS

    def _roll_and_confirm(self, cur: Any) -> None:
        before = self.sink.files_written
        lsn = self.sink.roll()
        if self.sink.files_written != before:
            crash_at("after-rename")
        if lsn > self.stats.confirmed_lsn:
            cur.send_feedback(write_lsn=lsn, flush_lsn=lsn, apply_lsn=lsn, force=True)
            self.stats.confirmed_lsn = lsn
            log.debug("confirmed %s", lsn_text(lsn))
        self.stats.files = self.sink.files_written

    def run(self, follow: bool = False, max_seconds: float | None = None) -> CaptureStats:
        """Stream until the drain marker (``follow=False``) or until stopped (SIGTERM/SIGINT)."""
        self.setup()
        conn, cur = start_streaming(self.url, self.slot, self.publication)
        self.sink.open()
        marker = None
        if not follow:
            marker = emit_drain_marker(self.sa_engine)
        else:
            self._signals = StopSignals().__enter__()
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        try:
            state = self._stream(cur, marker, deadline)
            if not state.in_txn:  # stopped inside a transaction: nothing is rolled, all of it comes again
                self._roll_and_confirm(cur)
        finally:
            if self._signals is not None:
                self._signals.__exit__()
                self._signals = None
            self.sink.abandon()
            conn.close()
            self.sa_engine.dispose()
        log_summary(self.stats)
        return self.stats

    def _stream(self, cur: Any, marker: str | None, deadline: float | None) -> Txn:
        """Handle messages until the drain marker, or a stop between transactions; roll when due.

        A stop waits for the transaction being read to commit, but not for ever: when its rest has not
        come within ``STOP_GRACE_SECONDS`` of the stop (however many of its messages come meanwhile), the
        loop returns inside it; nothing of the open file is confirmed, so all of it comes again on the
        next run."""
        state = Txn()
        last_feedback = time.monotonic()
        told = False
        read = 0
        while True:
            if self.stopping and not told:
                log.info("stop asked for: stopping after the transaction being read, once it is landed")
                told = True
            if state.in_txn and self._stop_overdue():
                log.warning(
                    "stopping inside transaction %s (commit at %s): its rest did not come within"
                    " %s s; what was not landed comes again on the next run",
                    state.xid, lsn_text(state.commit_lsn), STOP_GRACE_SECONDS,
                )  # fmt: skip
                return state
            msg = cur.read_message()
            if msg is None:
                if not state.in_txn and self.sink.due:
                    self._roll_and_confirm(cur)
                if self.stopping and not state.in_txn:
                    return state
                if deadline is not None and time.monotonic() > deadline:
                    raise CaptureError("drain did not reach its marker in time")
                if time.monotonic() - last_feedback > 10:
                    cur.send_feedback(reply=True)
                    last_feedback = time.monotonic()
                waits = [cur] if self._signals is None else [cur, self._signals.fd]
                select.select(waits, [], [], 0.5)
                self._poll_signals()
                continue
            if self._handle(msg.payload, msg.data_start, state, marker):
                return state
            read += 1
            if not state.in_txn or read % 4096 == 0:
                self._poll_signals()
            if not state.in_txn:
                if self.sink.due:
                    self._roll_and_confirm(cur)
                if self.stopping:
                    return state

    # ------------------------------------------------------------ messages, decoded once

    def _handle(self, buf: bytes, lsn: int, st: Txn, marker: str | None) -> bool:
        """Handle one message; True when the drain marker has been reached."""
        kind = buf[0]
        if kind == 0x42:  # B
            b = pgoutput.begin(buf)
            st.begin(b)
            st.maybe_landed = b.final_lsn <= self._skip_to[0]
            self.sink.begin(st)
            return False
        if kind == 0x43:  # C
            c = pgoutput.commit(buf)
            st.in_txn = False
            self.stats.transactions += 1
            self.sink.commit(c.end_lsn)
            crash_at("after-commit")
            return False
        if kind in (0x49, 0x55, 0x44):  # I U D
            self._row_change(kind, buf, lsn, st)
            return False
        if kind == 0x52:  # R
            with self.sa_engine.connect() as conn:
                schema = relation_schema(conn, pgoutput.relation(buf))
            self._relations[schema.relation.relid] = self.sink.describe(schema)
            return False
        if kind == 0x54:  # T
            self._truncate(buf, lsn, st)
            return False
        if kind == 0x4D:  # M
            m = pgoutput.message(buf)
            if m.prefix == DRAIN_PREFIX:
                return marker is not None and m.content.decode() == marker
            self._message(m, lsn, st)
            return False
        if kind in (0x4F, 0x59):  # Origin, Type: nothing to land
            return False
        raise pgoutput.ProtocolError(f"unknown pgoutput message {chr(kind)!r}")

    def _row_change(self, kind: int, buf: bytes, lsn: int, st: Txn) -> None:
        """An insert, update or delete: which tuples it holds and whether its key changed, each tuple
        encoded by the sink's relation; the sink lands it unless the landing already holds it."""
        (relid,) = _RELID.unpack_from(buf, 1)
        rel = self._relations[relid]
        old = None
        old_is_key = False
        if kind == 0x49:  # I: 'N' new tuple
            op, new = INSERT, rel.encode_insert(buf, 6)
        else:
            sub = buf[5]
            pos = 6
            if sub in (0x4B, 0x4F):  # 'K' the old key, 'O' the whole old row
                old = rel.encode(buf, 6, rel.key_idx)
                old_is_key = sub == 0x4B
                pos = old[-1] + 1  # the 'N' of an update's new tuple
            if kind == 0x44:  # D
                if old is None:
                    raise pgoutput.ProtocolError("delete without an old tuple")
                op, new = DELETE, None
            else:  # U; no old tuple: REPLICA IDENTITY DEFAULT and the key unchanged
                new = rel.encode(buf, pos, rel.key_idx)
                op = UPDATE if old is None or old[-2] == new[-2] else KEY_CHANGE
        # Only a transaction at or before the landed position can hold events to skip (after a restart).
        if st.maybe_landed and (st.commit_lsn, lsn) <= self._skip_to:
            self.stats.skipped += 2 if op == KEY_CHANGE else 1
            return
        self.stats.events += self.sink.write(rel, st, lsn, op, new, old, old_is_key)

    def _truncate(self, buf: bytes, lsn: int, st: Txn) -> None:
        relids, _options = pgoutput.truncate(buf)
        for relid in relids:
            rel = self._relations[relid]
            if st.maybe_landed and (st.commit_lsn, lsn) <= self._skip_to:
                self.stats.skipped += 1
                continue
            self.stats.events += self.sink.write(rel, st, lsn, TRUNCATE, None, None, False)

    def _message(self, m: pgoutput.Message, lsn: int, st: Txn) -> None:
        """A logical decoding message (a fence, say): only a position to the typed log, no event."""
        commit = st.commit_lsn if (m.transactional and st.in_txn) else m.lsn
        if (commit, lsn) > self._skip_to:
            self.sink.message(m, st, commit, lsn)


def lsn_text(lsn: int) -> str:
    """An LSN as PostgreSQL prints it (``16/B374D848``)."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def crash_at(step: str) -> None:
    """Fault injection (``CRASH_ENV``): the process kills itself at the named step."""
    crash_point(CRASH_ENV, step)


def start_streaming(url: str, slot: str, publication: str) -> tuple[Any, Any]:
    """(connection, cursor) streaming ``slot``'s pgoutput; SlotInUse while another capture holds it."""
    conn = psycopg2.connect(
        libpq_dsn(url, replication=True), connection_factory=psycopg2.extras.LogicalReplicationConnection
    )
    cur = conn.cursor()
    options = {"proto_version": "1", "publication_names": publication, "messages": "true"}
    try:
        cur.start_replication(slot_name=slot, decode=False, options=options)
    except psycopg2.errors.ObjectInUse as exc:
        conn.close()
        raise SlotInUse(f"slot {slot} is in use by another capture: {exc.pgerror}") from None
    return conn, cur


def emit_drain_marker(sa_engine: sa.Engine) -> str:
    """A drain's end: a marker message written now, which the drain streams up to."""
    marker = uuid.uuid4().hex
    with sa_engine.connect() as c:
        lsn = c.execute(
            sa.text("SELECT pg_logical_emit_message(false, :p, :m)"), {"p": DRAIN_PREFIX, "m": marker}
        ).scalar_one()
    log.info("draining up to %s", lsn)
    return marker


def log_summary(stats: CaptureStats) -> None:
    log.info(
        "capture: %s transactions, %s events landed, %s skipped, %s files, confirmed %s",
        stats.transactions,
        stats.events,
        stats.skipped,
        stats.files,
        lsn_text(stats.confirmed_lsn),
    )
