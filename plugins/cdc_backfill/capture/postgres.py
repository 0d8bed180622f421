"""PostgreSQL capture: pgoutput over a replication connection, landed as Debezium-shaped JSON lines.

Each event is what Debezium's PostgreSQL connector writes (JSON converter, schemas off) plus
``source.commit_lsn``, so that its position, (commit LSN, LSN of the change), is exact. The signal
table is in the publication, so the snapshot engine's watermark rows land at their commit position
among the other changes.

Durability: a file is fsynced and renamed before the slot is told (``flush_lsn``) that the
transactions in it are safe; the slot then never sends them again. A crash in between makes the
server send them again; the capture skips every event at or before the position the landing zone
already holds (see ``landing.landed_position``), so no event is landed twice.
"""

from __future__ import annotations

import logging
import os
import select
import signal
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
from sqlalchemy.engine import make_url

from cdc_backfill import __version__
from cdc_backfill.capture.binding import (
    BINDING_TABLE,
    check_binding,
    check_slot_not_lost,
    forget_binding,
    record_binding,
)
from cdc_backfill.capture.landing import LandingWriter, landed_position
from cdc_backfill.capture.lines import (
    RelInfo,
    TxnState,
    lsn_text,
    message_line,
    row_line,
    schema_document,
    source_prefix,
)
from cdc_backfill.capture.publication import (
    DEFAULT_PUBLICATION,
    DEFAULT_SLOT,
    CaptureError,
    SlotInUse,
    choose_tables,
    ensure_publication,
    ensure_slot,
    list_tables,
    slot_exists,
)
from cdc_backfill.capture.status import capture_status
from cdc_backfill.config import source_engine
from cdc_backfill.files import write_atomically
from cdc_backfill.layout import schema_file
from cdc_backfill.names import collection_name
from cdc_backfill.pg import pgoutput
from cdc_backfill.pg.catalog import array_element, primary_key_of, type_name
from cdc_backfill.pg.connect import libpq_dsn
from cdc_backfill.pg.fastpath import column_kind
from cdc_backfill.signals.marks import DRAIN_PREFIX
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.signals.tables import PROGRESS_TABLE

__all__ = [
    "CRASH_ENV",
    "DEFAULT_PUBLICATION",
    "DEFAULT_SLOT",
    "CaptureError",
    "PostgresCapture",
    "capture_status",
]

log = logging.getLogger(__name__)

# Fault injection for tests: the process kills itself (SIGKILL) at the named step.
CRASH_ENV = "CDC_BACKFILL_CAPTURE_CRASH_AT"
_RELID = struct.Struct(">I")


@dataclass
class CaptureStats:
    transactions: int = 0
    events: int = 0
    skipped: int = 0  # events at or before the landed position (sent again after a restart)
    files: int = 0
    confirmed_lsn: int = 0
    started: float = field(default_factory=time.monotonic)


class PostgresCapture:
    """One capture run: set up publication and slot, stream, land, confirm."""

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
        self.landing = Path(landing)
        self.slot = slot
        self.publication = publication
        self.patterns = list(collections) if collections else None
        self.signal_table = signal_table
        self._roll = (roll_bytes, roll_seconds)
        self.writer: Any = None  # made by run(), once setup() found the landing to be the slot's
        self.stats = CaptureStats()
        self.engine = source_engine(url, isolation_level="AUTOCOMMIT")
        self.db = make_url(url).database or ""
        self._relations: dict[int, RelInfo] = {}
        self._stop = False
        self._skip_to = self._landed()
        self._elements: dict[int, int | None] = {}

    def _make_writer(self, roll_bytes: int, roll_seconds: float) -> Any:
        return LandingWriter(self.landing, roll_bytes, roll_seconds)

    def _landed(self) -> tuple[int, ...]:
        """The position the landing zone holds: events at or before it are not landed again."""
        return landed_position(self.landing)

    # ------------------------------------------------------------ setup

    def setup(self) -> list[str]:
        """Publication (the chosen tables and the signal table) and slot; returns warnings."""
        store = SignalStore(self.url, self.signal_table, engine=self.engine)
        store.init()
        with self.engine.connect() as conn:
            # the project's own bookkeeping (signal statuses, snapshot progress) is not data to capture
            bookkeeping = set(store.protected[1:]) | {
                collection_name(store.schema or "public", PROGRESS_TABLE)
            }
            bookkeeping.add(collection_name(store.schema or "public", BINDING_TABLE))
            # the slot's landing first: a refused capture creates, streams and confirms nothing
            exists = slot_exists(conn, self.slot)
            check_slot_not_lost(self.landing, self.slot, exists)
            if not exists:
                forget_binding(conn, self.slot, store.schema)  # the name is free for this landing
            source = check_binding(conn, self.landing, self.slot, store.schema)
            tables = [t for t in list_tables(conn) if t.collection not in bookkeeping]
            chosen, warnings = choose_tables(tables, self.patterns, [store.signal_collection])
            added = ensure_publication(conn, self.publication, chosen)
            created = ensure_slot(conn, self.slot)
            record_binding(conn, self.landing, self.slot, store.schema, source)
        for w in warnings:
            log.warning("%s", w)
        if added:
            log.info("publication %s: added %s", self.publication, ", ".join(added))
        if created:
            log.info("slot %s created", self.slot)
        return warnings

    # ------------------------------------------------------------ relations

    def _element_of(self, type_oid: int) -> int | None:
        if type_oid not in self._elements:
            with self.engine.connect() as conn:
                self._elements[type_oid] = array_element(conn, type_oid)
        return self._elements[type_oid]

    def _on_relation(self, rel: pgoutput.Relation) -> None:
        """A relation message: how to encode the table's rows from now on, and its schema document."""
        coll = collection_name(rel.namespace, rel.name)
        names = [c.name for c in rel.columns]
        with self.engine.connect() as conn:
            pk = primary_key_of(conn, rel.relid)
            types = [type_name(conn, c.type_oid, c.typmod) for c in rel.columns]
        key_names = list(pk) or [c.name for c in rel.columns if c.is_key]
        kinds = [column_kind(c.type_oid, self._element_of) for c in rel.columns]
        self._relations[rel.relid] = RelInfo(
            coll,
            rel.namespace,
            rel.name,
            names,
            bytes(k for k, _ in kinds),
            tuple(enc for _, enc in kinds),
            tuple(names.index(k) for k in key_names if k in names),
        )
        self._describe(coll, key_names, rel, types)

    def _describe(self, coll: str, key_names: list[str], rel: pgoutput.Relation, types: list[str]) -> None:
        path = schema_file(self.landing, coll)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, schema_document(coll, key_names, rel.columns, types))

    # ------------------------------------------------------------ the loop

    def request_stop(self, *_: object) -> None:
        self._stop = True

    def _crash_at(self, step: str) -> None:
        if os.environ.get(CRASH_ENV) == step:
            log.warning("fault injection: killing myself at %s", step)
            os.kill(os.getpid(), signal.SIGKILL)

    def _roll_and_confirm(self, cur: Any) -> None:
        before = self.writer.files_written
        lsn = self.writer.roll()
        if self.writer.files_written != before:
            self._crash_at("after-rename")
        if lsn > self.stats.confirmed_lsn:
            cur.send_feedback(write_lsn=lsn, flush_lsn=lsn, apply_lsn=lsn, force=True)
            self.stats.confirmed_lsn = lsn
            log.debug("confirmed %s", lsn_text(lsn))
        self.stats.files = self.writer.files_written

    def run(self, follow: bool = False, max_seconds: float | None = None) -> CaptureStats:
        """Stream until the drain marker (``follow=False``) or until stopped (SIGTERM/SIGINT)."""
        self.setup()
        conn = psycopg2.connect(
            libpq_dsn(self.url, replication=True),
            connection_factory=psycopg2.extras.LogicalReplicationConnection,
        )
        cur = conn.cursor()
        options = {"proto_version": "1", "publication_names": self.publication, "messages": "true"}
        try:
            cur.start_replication(slot_name=self.slot, decode=False, options=options)
        except psycopg2.errors.ObjectInUse as exc:
            conn.close()
            raise SlotInUse(f"slot {self.slot} is in use by another capture: {exc.pgerror}") from None
        # only once the slot is ours: a writer clears files no manifest names yet, which a capture that
        # holds the slot may be about to name
        self.writer = self._make_writer(*self._roll)
        marker = None
        if not follow:
            marker = uuid.uuid4().hex
            with self.engine.connect() as c:
                lsn = c.execute(
                    sa.text("SELECT pg_logical_emit_message(false, :p, :m)"), {"p": DRAIN_PREFIX, "m": marker}
                ).scalar_one()
            log.info("draining up to %s", lsn)
        else:
            signal.signal(signal.SIGTERM, self.request_stop)
            signal.signal(signal.SIGINT, self.request_stop)
        state = TxnState()
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        last_feedback = time.monotonic()
        try:
            while True:
                msg = cur.read_message()
                if msg is None:
                    if not state.in_txn and self.writer.due:
                        self._roll_and_confirm(cur)
                    if self._stop and not state.in_txn:
                        break
                    if deadline is not None and time.monotonic() > deadline:
                        raise CaptureError("drain did not reach its marker in time")
                    if time.monotonic() - last_feedback > 10:
                        cur.send_feedback(reply=True)
                        last_feedback = time.monotonic()
                    select.select([cur], [], [], 0.5)
                    continue
                if self._handle(msg.payload, msg.data_start, state, marker):
                    break
                if not state.in_txn:
                    if self.writer.due:
                        self._roll_and_confirm(cur)
                    if self._stop:
                        break
            self._roll_and_confirm(cur)
        finally:
            self.writer.abandon()
            conn.close()
            self.engine.dispose()
        log.info(
            "capture: %s transactions, %s events landed, %s skipped, %s files, confirmed %s",
            self.stats.transactions,
            self.stats.events,
            self.stats.skipped,
            self.stats.files,
            lsn_text(self.stats.confirmed_lsn),
        )
        return self.stats

    # ------------------------------------------------------------ messages

    def _handle(self, buf: bytes, lsn: int, st: TxnState, marker: str | None) -> bool:
        """Handle one message; True when the drain marker has been reached."""
        kind = buf[0]
        if kind == 0x42:  # B
            b = pgoutput.begin(buf)
            st.begin(b)
            st.maybe_landed = b.final_lsn <= self._skip_to[0]
            return False
        if kind == 0x43:  # C
            c = pgoutput.commit(buf)
            st.in_txn = False
            self.stats.transactions += 1
            self.writer.commit_done(c.end_lsn)
            self._crash_at("after-commit")
            return False
        if kind in (0x49, 0x55, 0x44):  # I U D
            self._row_change(kind, buf, lsn, st)
            return False
        if kind == 0x52:  # R
            self._on_relation(pgoutput.relation(buf))
            return False
        if kind == 0x54:  # T
            relids, _options = pgoutput.truncate(buf)
            for relid in relids:
                rel = self._relations[relid]
                self._emit(rel, st, lsn, "t", b"null", b"null", b"null")
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

    def _source_prefix(self, rel: RelInfo, st: TxnState) -> bytes:
        cached = st.prefixes.get(rel.collection)
        if cached is None:
            cached = source_prefix(
                version=f"cdc_backfill-{__version__}", name=self.slot, ts_ms=st.ts_ms, db=self.db,
                schema=rel.schema, table=rel.table, txid=st.xid, commit_lsn=st.commit_lsn,
            )  # fmt: skip
            st.prefixes[rel.collection] = cached
        return cached

    def _emit(
        self, rel: RelInfo, st: TxnState, lsn: int, op: str, key: bytes, before: bytes, after: bytes
    ) -> None:
        # Only a transaction at or before the landed position can hold events to skip (after a restart).
        if st.maybe_landed and (st.commit_lsn, lsn) <= self._skip_to:
            self.stats.skipped += 1
            return
        prefix = st.prefixes.get(rel.collection) or self._source_prefix(rel, st)
        self.writer.write(row_line(key, before, after, prefix, lsn, op, st.ts_tail), st.commit_lsn, lsn)
        self.stats.events += 1

    def _row_change(self, kind: int, buf: bytes, lsn: int, st: TxnState) -> None:
        (relid,) = _RELID.unpack_from(buf, 1)
        rel = self._relations[relid]
        if kind == 0x49:  # I: 'N' new tuple
            after, key, _ = rel.encode(buf, 6)
            self._emit(rel, st, lsn, "c", key, b"null", after)
            return
        sub = buf[5]
        old_row = old_key = None
        pos = 6
        if sub in (0x4B, 0x4F):  # 'K' the old key, 'O' the whole old row
            old_row, old_key, pos = rel.encode(buf, 6)
            pos += 1  # the 'N' of an update's new tuple
        if kind == 0x44:  # D
            if old_key is None or old_row is None:
                raise pgoutput.ProtocolError("delete without an old tuple")
            self._emit(rel, st, lsn, "d", old_key, old_key if sub == 0x4B else old_row, b"null")
            return
        after, key, _ = rel.encode(buf, pos)  # U
        if old_key is None or old_row is None:
            self._emit(rel, st, lsn, "u", key, key, after)  # REPLICA IDENTITY DEFAULT, key unchanged
            return
        before = old_key if sub == 0x4B else old_row
        if old_key != key:
            # a key change: a delete of the old key and a create of the new one (as Debezium does)
            self._emit(rel, st, lsn, "d", old_key, before, b"null")
            self._emit(rel, st, lsn, "c", key, b"null", after)
            return
        self._emit(rel, st, lsn, "u", key, before, after)

    def _message(self, m: pgoutput.Message, lsn: int, st: TxnState) -> None:
        commit = st.commit_lsn if (m.transactional and st.in_txn) else m.lsn
        position = (commit, lsn)
        if position <= self._skip_to:
            self.stats.skipped += 1
            return
        line = message_line(
            m, version=f"cdc_backfill-{__version__}", name=self.slot, db=self.db,
            ts_ms=st.ts_ms if m.transactional else int(time.time() * 1000),
            txid=st.xid if m.transactional else None, commit_lsn=commit, lsn=lsn,
        )  # fmt: skip
        self.writer.write(line, *position)
        self.stats.events += 1
