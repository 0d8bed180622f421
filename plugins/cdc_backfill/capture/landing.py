"""The JSON-lines landing (``capture postgres --format json``): stream files, and the capture's sink
that writes them.

A stream file is written to a temporary name, fsynced, renamed, the folder fsynced; a finished file is
named by the stream positions it holds, ``cdc-<first commit>-<last commit>-<last lsn>.jsonl`` (16 hex
digits each), so the landing zone itself says how far the stream has landed (``landed_position``). A
file rolls only between transactions, so the renamed files hold whole transactions: the end LSN of the
last of them is what the loop may confirm (``capture.postgres`` holds the durability rule).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import time
import uuid
from pathlib import Path

from cdc_backfill import __version__
from cdc_backfill.capture.lines import (
    JsonRelation,
    line_tail,
    message_line,
    row_line,
    schema_document,
    source_prefix,
)
from cdc_backfill.capture.sinks import (
    DELETE,
    INSERT,
    TRUNCATE,
    UPDATE,
    Encoded,
    RelationSchema,
    SinkOptions,
    Txn,
    WriterSink,
)
from cdc_backfill.files import fsync_dir, write_atomically
from cdc_backfill.lakepath import LakePath, S3Path
from cdc_backfill.landing.layout import schema_file, stream_dir, stream_file_name
from cdc_backfill.landing.stream import landed_position
from cdc_backfill.pg import pgoutput
from cdc_backfill.pg.fastpath import column_kind

log = logging.getLogger(__name__)


class LandingWriter:
    """Appends event lines to the current stream file and rolls it by size and age.

    ``write`` takes a line and the event's position; ``commit_done`` marks a transaction boundary.
    ``roll`` makes the file durable and returns the end LSN of the last transaction wholly inside
    finished files: only that may be confirmed to the server.
    """

    def __init__(self, folder: LakePath, roll_bytes: int = 64 << 20, roll_seconds: float = 60.0) -> None:
        self.stream = stream_dir(folder)
        self.stream.mkdir(parents=True, exist_ok=True)
        # Left-over partial files of a crashed run hold nothing confirmed: their events come again.
        for stale in self.stream.glob(".cdc-*.part"):
            stale.unlink()
        # on S3 a file is one PUT at its roll: it grows in memory (at most roll_bytes) until then
        self._in_memory = isinstance(self.stream, S3Path)
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
            self._fh = io.BytesIO() if self._in_memory else open(self._tmp, "wb", buffering=1 << 20)
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
        final = self.stream / stream_file_name(self._first[0], self._last_commit, self._last_lsn)
        if self._in_memory:
            final.write_bytes(self._fh.getvalue())  # one PUT: visible whole once it returns
            self._fh.close()
        else:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()
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
            if self._tmp is not None and not self._in_memory:
                with contextlib.suppress(FileNotFoundError):
                    self._tmp.unlink()
        self._fh = None


class JsonLinesSink(WriterSink):
    """The capture's JSON-lines sink (a ``capture.sinks.CaptureSink``): each event a line as Debezium
    writes it (``capture.lines``) in the stream files of a :class:`LandingWriter`, each table's schema
    document beside them (docs/design.md §8). A logical decoding message is an event of its own."""

    lands_messages = True

    def __init__(self, options: SinkOptions) -> None:
        self.landing = options.landing
        self.name = options.slot  # the source block's connector name
        self.db = options.db
        self.version = f"cdc_backfill-{__version__}"
        self._roll = (options.roll_bytes, options.roll_seconds)
        self._element_of = options.element_of
        self.writer: LandingWriter = None  # type: ignore[assignment]  # made by open()
        # per transaction: each table's source block up to its lsn, and what follows an event's op
        self._prefixes: dict[str, bytes] = {}
        self._tail = line_tail(0)

    def landed(self) -> tuple[int, ...]:
        return landed_position(self.landing)

    def open(self) -> None:
        # only once the slot is the loop's: a writer clears partial files, which a capture holding the
        # slot may be writing
        self.writer = LandingWriter(self.landing, *self._roll)

    def describe(self, schema: RelationSchema) -> JsonRelation:
        rel = schema.relation
        path = schema_file(self.landing, schema.collection)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(
            path, schema_document(schema.collection, schema.key, list(rel.columns), schema.types)
        )
        kinds = [column_kind(c.type_oid, self._element_of) for c in rel.columns]
        return JsonRelation(
            schema.collection, rel.namespace, rel.name, [c.name for c in rel.columns],
            bytes(k for k, _ in kinds), tuple(enc for _, enc in kinds), schema.key_idx,
        )  # fmt: skip

    def begin(self, st: Txn) -> None:
        self._prefixes = {}
        self._tail = line_tail(int(time.time() * 1000))

    def write(
        self, rel: JsonRelation, st: Txn, lsn: int, op: str, new: Encoded | None, old: Encoded | None,
        old_is_key: bool,
    ) -> int:  # fmt: skip
        # encoded tuples are (row JSON, key JSON, position). An event's before is the old row; only its
        # key when the server sent only the key ('K'); the key when it sent no old tuple (an update)
        if op == INSERT:
            after, key, _ = new  # type: ignore[misc]
            before = b"null"
        elif op == UPDATE:
            after, key, _ = new  # type: ignore[misc]
            before = key if old is None else old[1] if old_is_key else old[0]
        elif op == DELETE:
            key, before, after = old[1], old[1] if old_is_key else old[0], b"null"  # type: ignore[index]
        elif op == TRUNCATE:
            key = before = after = b"null"
        else:  # a key change: a delete of the old key and a create of the new one (as Debezium does)
            old_row, old_key, _ = old  # type: ignore[misc]
            self._line(rel, st, lsn, DELETE, old_key, old_key if old_is_key else old_row, b"null")
            self._line(rel, st, lsn, INSERT, new[1], b"null", new[0])  # type: ignore[index]
            return 2
        # _line's two lines, inline: the hot path makes one call into the sink, no more
        prefix = self._prefixes.get(rel.collection) or self._source_prefix(rel, st)
        self.writer.write(row_line(key, before, after, prefix, lsn, op, self._tail), st.commit_lsn, lsn)
        return 1

    def _line(
        self, rel: JsonRelation, st: Txn, lsn: int, op: str, key: bytes, before: bytes, after: bytes
    ) -> None:
        prefix = self._prefixes.get(rel.collection) or self._source_prefix(rel, st)
        self.writer.write(row_line(key, before, after, prefix, lsn, op, self._tail), st.commit_lsn, lsn)

    def _source_prefix(self, rel: JsonRelation, st: Txn) -> bytes:
        prefix = self._prefixes[rel.collection] = source_prefix(
            version=self.version, name=self.name, ts_ms=st.ts_ms, db=self.db, schema=rel.schema,
            table=rel.table, txid=st.xid, commit_lsn=st.commit_lsn,
        )  # fmt: skip
        return prefix

    def message(self, m: pgoutput.Message, st: Txn, commit: int, lsn: int) -> None:
        line = message_line(
            m, version=self.version, name=self.name, db=self.db,
            ts_ms=st.ts_ms if m.transactional else int(time.time() * 1000),
            txid=st.xid if m.transactional else None, commit_lsn=commit, lsn=lsn,
        )  # fmt: skip
        self.writer.write(line, commit, lsn)
