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
import re
import select
import signal
import struct
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import psycopg2
import psycopg2.extras
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from cdc_backfill import __version__
from cdc_backfill.capture.landing import SCHEMA_DIR, LandingWriter, landed_position
from cdc_backfill.config import mask_url, source_engine
from cdc_backfill.files import write_atomically
from cdc_backfill.layout import stream_dir
from cdc_backfill.names import collection_name
from cdc_backfill.pg import pgoutput
from cdc_backfill.pg.connect import libpq_dsn
from cdc_backfill.pg.fastpath import column_kind, encode_tuple
from cdc_backfill.signals.tables import PROGRESS_TABLE

log = logging.getLogger(__name__)

DRAIN_PREFIX = "cdc_backfill.drain"
DEFAULT_SLOT = "cdc_backfill"
DEFAULT_PUBLICATION = "cdc_backfill"
# Fault injection for tests: the process kills itself (SIGKILL) at the named step.
CRASH_ENV = "CDC_BACKFILL_CAPTURE_CRASH_AT"
_RELID = struct.Struct(">I")


class CaptureError(RuntimeError):
    """Capture cannot start or go on; the message says why and what to do."""


# ---------------------------------------------------------------- publication and slot


@dataclass(frozen=True)
class TableCheck:
    collection: str
    schema: str
    table: str
    has_primary_key: bool
    replica_identity: str  # d, f, i, n


def refusal(t: TableCheck) -> str | None:
    """Why a table cannot be published, or None. Without a key, UPDATE and DELETE would fail at the source."""
    if t.replica_identity == "n":
        return f"{t.collection} has REPLICA IDENTITY NOTHING: its updates and deletes cannot be captured"
    if t.replica_identity == "d" and not t.has_primary_key:
        return (
            f"{t.collection} has no primary key and REPLICA IDENTITY DEFAULT: adding it to a publication would "
            f"make every UPDATE and DELETE on it fail at the source. Add a primary key, or run "
            f"ALTER TABLE {t.collection} REPLICA IDENTITY FULL"
        )
    return None


_TABLES_SQL = sa.text(
    """
    SELECT n.nspname AS schema, c.relname AS table, c.relreplident AS identity,
           EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary) AS has_pk
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
      AND n.nspname NOT LIKE 'pg_toast%' AND n.nspname NOT LIKE 'pg_temp%'
    ORDER BY 1, 2
    """
)


def list_tables(conn: sa.Connection) -> list[TableCheck]:
    return [
        TableCheck(collection_name(r.schema, r.table), r.schema, r.table, bool(r.has_pk), str(r.identity))
        for r in conn.execute(_TABLES_SQL)
    ]


def choose_tables(
    tables: Sequence[TableCheck], patterns: Sequence[str] | None, always: Sequence[str]
) -> tuple[list[TableCheck], list[str]]:
    """(tables to publish, warnings). Named tables that cannot be published are refused; tables only
    caught by the default pattern are left out with a warning."""
    chosen: list[TableCheck] = []
    warnings: list[str] = []
    rxs = [re.compile(p) for p in (patterns or [])]
    for t in tables:
        forced = t.collection in always
        named = any(rx.fullmatch(t.collection) for rx in rxs)
        if not (forced or named or not rxs):
            continue
        why = refusal(t)
        if why and (named or forced):
            raise CaptureError(why)
        if why:
            warnings.append(f"left out: {why}")
            continue
        chosen.append(t)
    if rxs:
        for p, rx in zip(patterns or [], rxs, strict=True):
            if not any(rx.fullmatch(t.collection) for t in tables):
                raise CaptureError(f"--tables {p!r} matches no table in the source")
    return chosen, warnings


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def ensure_publication(conn: sa.Connection, name: str, tables: Sequence[TableCheck]) -> list[str]:
    """Create the publication or add the missing tables to it; return the tables added."""
    have = {
        (r.schemaname, r.tablename)
        for r in conn.execute(sa.text("SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = :p"), {"p": name})
    }  # fmt: skip
    exists = conn.execute(sa.text("SELECT 1 FROM pg_publication WHERE pubname = :p"), {"p": name}).first()
    missing = [t for t in tables if (t.schema, t.table) not in have]
    names = ", ".join(f"{_ident(t.schema)}.{_ident(t.table)}" for t in missing)
    if not exists:
        conn.execute(sa.text(f"CREATE PUBLICATION {_ident(name)}" + (f" FOR TABLE {names}" if names else "")))
    elif missing:
        conn.execute(sa.text(f"ALTER PUBLICATION {_ident(name)} ADD TABLE {names}"))
    return [t.collection for t in missing]


def ensure_slot(conn: sa.Connection, slot: str) -> bool:
    """Create the pgoutput slot if missing (autocommit connection); True if created."""
    row = conn.execute(
        sa.text("SELECT plugin FROM pg_replication_slots WHERE slot_name = :s"), {"s": slot}
    ).first()
    if row is not None:
        if row.plugin != "pgoutput":
            raise CaptureError(
                f"slot {slot} exists with plugin {row.plugin}, not pgoutput: choose another --slot"
            )
        return False
    conn.execute(sa.text("SELECT pg_create_logical_replication_slot(:s, 'pgoutput')"), {"s": slot})
    return True


# ---------------------------------------------------------------- events


@dataclass
class RelInfo:
    collection: str
    schema: str
    table: str
    names: list[str]
    kinds: bytes  # per column, the fastpath kind code
    encoders: tuple[Callable[[bytes], bytes], ...]
    key_idx: tuple[int, ...]
    name_json: tuple[bytes, ...] = ()  # b'"column":' per column

    def __post_init__(self) -> None:
        self.name_json = tuple(orjson.dumps(n) + b":" for n in self.names)

    def encode(self, buf: bytes, pos: int) -> tuple[bytes, bytes, int]:
        """(row JSON, key JSON, position after the tuple)."""
        return encode_tuple(buf, pos, self.kinds, self.encoders, self.name_json, self.key_idx)


@dataclass
class CaptureStats:
    transactions: int = 0
    events: int = 0
    skipped: int = 0  # events at or before the landed position (sent again after a restart)
    files: int = 0
    confirmed_lsn: int = 0
    started: float = field(default_factory=time.monotonic)


def source_block(
    *,
    version: str,
    name: str,
    ts_ms: int,
    db: str,
    schema: str,
    table: str,
    txid: int | None,
    commit_lsn: int,
) -> dict[str, Any]:
    """Every event's source block without its ``lsn``, in the order ``spark.native`` expects it."""
    return {
        "version": version,
        "connector": "postgresql",
        "name": name,
        "ts_ms": ts_ms,
        "snapshot": "false",
        "db": db,
        "schema": schema,
        "table": table,
        "txId": txid,
        "commit_lsn": commit_lsn,
    }


def source_prefix(
    *, version: str, name: str, ts_ms: int, db: str, schema: str, table: str, txid: int, commit_lsn: int
) -> bytes:
    """A row event's source block up to ``"lsn":`` (each event appends its own LSN): the same for every
    event of one table in one transaction, so it is built once per pair."""
    src = source_block(
        version=version, name=name, ts_ms=ts_ms, db=db, schema=schema, table=table, txid=txid,
        commit_lsn=commit_lsn,
    )  # fmt: skip
    return orjson.dumps(src)[:-1] + b',"lsn":'


def line_tail(ts_ms: int) -> bytes:
    """What follows a row event's op: the event's ``ts_ms`` and the line's end."""
    return b'","ts_ms":' + str(ts_ms).encode() + b"}}\n"


def row_line(key: bytes, before: bytes, after: bytes, prefix: bytes, lsn: int, op: str, tail: bytes) -> bytes:
    """One row event (or truncate) as the capture lands it; ``spark.native`` proves lines against this
    layout, so the benchmark builds its stream with this function too."""
    return b"".join(
        (
            b'{"key":',
            key,
            b',"value":{"before":',
            before,
            b',"after":',
            after,
            b',"source":',
            prefix,
            str(lsn).encode(),
            b'},"op":"',
            op.encode(),
            tail,
        )
    )


def lsn_text(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


class PostgresCapture:
    """One capture run: set up publication and slot, stream, land, confirm."""

    def __init__(
        self,
        url: str,
        landing: Path,
        slot: str = DEFAULT_SLOT,
        publication: str = DEFAULT_PUBLICATION,
        tables: Sequence[str] | None = None,
        signal_table: str | None = None,
        roll_bytes: int = 64 << 20,
        roll_seconds: float = 30.0,
    ) -> None:
        self.url = url
        self.landing = Path(landing)
        self.slot = slot
        self.publication = publication
        self.patterns = list(tables) if tables else None
        self.signal_table = signal_table
        self.writer = LandingWriter(self.landing, roll_bytes, roll_seconds)
        self.stats = CaptureStats()
        self.engine = source_engine(url, isolation_level="AUTOCOMMIT")
        self.db = make_url(url).database or ""
        self._relations: dict[int, RelInfo] = {}
        self._stop = False
        self._skip_to = landed_position(self.landing)
        self._elements: dict[int, int | None] = {}

    # ------------------------------------------------------------ setup

    def setup(self) -> list[str]:
        """Publication (the chosen tables and the signal table) and slot; returns warnings."""
        from cdc_backfill.signals.store import SignalStore

        store = SignalStore(self.url, self.signal_table, engine=self.engine)
        store.init()
        with self.engine.connect() as conn:
            # the project's own bookkeeping (signal statuses, snapshot progress) is not data to capture
            bookkeeping = set(store.protected[1:]) | {
                collection_name(store.schema or "public", PROGRESS_TABLE)
            }
            tables = [t for t in list_tables(conn) if t.collection not in bookkeeping]
            chosen, warnings = choose_tables(tables, self.patterns, [store.signal_collection])
            added = ensure_publication(conn, self.publication, chosen)
            created = ensure_slot(conn, self.slot)
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
                row = conn.execute(
                    sa.text("SELECT typelem, typcategory FROM pg_type WHERE oid = :o"), {"o": type_oid}
                ).first()
            self._elements[type_oid] = (
                int(row.typelem) if row is not None and row.typcategory == "A" else None
            )
        return self._elements[type_oid]

    def _on_relation(self, rel: pgoutput.Relation) -> None:
        coll = collection_name(rel.namespace, rel.name)
        names = [c.name for c in rel.columns]
        with self.engine.connect() as conn:
            pk = [
                r[0]
                for r in conn.execute(
                    sa.text(
                        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                        "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = :r AND i.indisprimary "
                        "ORDER BY array_position(i.indkey, a.attnum)"
                    ),
                    {"r": rel.relid},
                )
            ]
            types = [
                conn.execute(
                    sa.text("SELECT format_type(:o, :m)"), {"o": c.type_oid, "m": c.typmod}
                ).scalar_one()
                for c in rel.columns
            ]
        key_names = pk or [c.name for c in rel.columns if c.is_key]
        kinds = [column_kind(c.type_oid, self._element_of) for c in rel.columns]
        info = RelInfo(
            coll,
            rel.namespace,
            rel.name,
            names,
            bytes(k for k, _ in kinds),
            tuple(enc for _, enc in kinds),
            tuple(names.index(k) for k in key_names if k in names),
        )
        self._relations[rel.relid] = info
        schema_doc = {
            "collection": coll,
            "key": key_names,
            "columns": [
                {"name": c.name, "type": t, "type_oid": c.type_oid, "typmod": c.typmod}
                for c, t in zip(rel.columns, types, strict=True)
            ],
        }
        folder = self.landing / SCHEMA_DIR
        folder.mkdir(parents=True, exist_ok=True)
        write_atomically(folder / f"{coll}.json", orjson.dumps(schema_doc, option=orjson.OPT_INDENT_2))

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
            raise CaptureError(f"slot {self.slot} is in use by another capture: {exc.pgerror}") from None
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
        state = _TxnState()
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

    def _handle(self, buf: bytes, lsn: int, st: _TxnState, marker: str | None) -> bool:
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

    def _source_prefix(self, rel: RelInfo, st: _TxnState) -> bytes:
        cached = st.prefixes.get(rel.collection)
        if cached is None:
            cached = source_prefix(
                version=f"cdc_backfill-{__version__}", name=self.slot, ts_ms=st.ts_ms, db=self.db,
                schema=rel.schema, table=rel.table, txid=st.xid, commit_lsn=st.commit_lsn,
            )  # fmt: skip
            st.prefixes[rel.collection] = cached
        return cached

    def _emit(
        self, rel: RelInfo, st: _TxnState, lsn: int, op: str, key: bytes, before: bytes, after: bytes
    ) -> None:
        # Only a transaction at or before the landed position can hold events to skip (after a restart).
        if st.maybe_landed and (st.commit_lsn, lsn) <= self._skip_to:
            self.stats.skipped += 1
            return
        prefix = st.prefixes.get(rel.collection) or self._source_prefix(rel, st)
        self.writer.write(row_line(key, before, after, prefix, lsn, op, st.ts_tail), st.commit_lsn, lsn)
        self.stats.events += 1

    def _row_change(self, kind: int, buf: bytes, lsn: int, st: _TxnState) -> None:
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

    def _message(self, m: pgoutput.Message, lsn: int, st: _TxnState) -> None:
        import base64

        commit = st.commit_lsn if (m.transactional and st.in_txn) else m.lsn
        position = (commit, lsn)
        if position <= self._skip_to:
            self.stats.skipped += 1
            return
        src = source_block(
            version=f"cdc_backfill-{__version__}", name=self.slot,
            ts_ms=st.ts_ms if m.transactional else int(time.time() * 1000), db=self.db, schema="", table="",
            txid=st.xid if m.transactional else None, commit_lsn=commit,
        )  # fmt: skip
        src["lsn"] = lsn
        value = {
            "source": src,
            "op": "m",
            "ts_ms": int(time.time() * 1000),
            "message": {"prefix": m.prefix, "content": base64.b64encode(m.content).decode()},
        }
        self.writer.write(orjson.dumps({"key": {"prefix": m.prefix}, "value": value}) + b"\n", *position)
        self.stats.events += 1


class _TxnState:
    __slots__ = ("commit_lsn", "in_txn", "maybe_landed", "prefixes", "ts_ms", "ts_tail", "xid")

    def __init__(self) -> None:
        self.in_txn = False
        self.maybe_landed = False
        self.commit_lsn = 0
        self.xid = 0
        self.ts_ms = 0
        self.ts_tail = line_tail(0)
        self.prefixes: dict[str, bytes] = {}

    def begin(self, b: pgoutput.Begin) -> None:
        self.in_txn = True
        self.commit_lsn = b.final_lsn
        self.xid = b.xid
        self.ts_ms = b.commit_time_us // 1000
        self.ts_tail = line_tail(int(time.time() * 1000))
        self.prefixes = {}


# ---------------------------------------------------------------- status


def capture_status(url: str, landing: Path | None, slot: str = DEFAULT_SLOT) -> dict[str, Any]:
    """Slot lag, last confirmed LSN, and what the landing zone holds."""
    engine = source_engine(url)
    try:
        with engine.connect() as conn:
            row = conn.execute(
                sa.text(
                    "SELECT active, confirmed_flush_lsn::text AS confirmed, restart_lsn::text AS restart, "
                    "pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint AS lag "
                    "FROM pg_replication_slots WHERE slot_name = :s"
                ),
                {"s": slot},
            ).first()
    except sa.exc.OperationalError as exc:
        raise CaptureError(f"cannot reach {mask_url(url)}: {str(exc.orig).strip()}") from None
    finally:
        engine.dispose()
    out: dict[str, Any] = {"slot": slot}
    if row is None:
        out.update(exists=False)
    else:
        out.update(
            exists=True,
            active=row.active,
            confirmed_lsn=row.confirmed,
            restart_lsn=row.restart,
            lag_bytes=row.lag,
        )
    if landing is not None:
        stream = stream_dir(Path(landing))
        files = sorted(stream.glob("cdc-*.jsonl")) if stream.is_dir() else []
        commit, lsn = landed_position(Path(landing))
        out.update(
            files=len(files),
            bytes=sum(f.stat().st_size for f in files),
            last_file=files[-1].name if files else None,
            landed_position=[commit, lsn],
        )
    return out
