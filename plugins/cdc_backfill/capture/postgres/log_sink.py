"""The capture's sink (docs/design.md §5.0): the replication loop (``capture.postgres.loop``) lands the typed
event log through it.

Each relation message describes its collection's log schema (a new version when its columns
changed), each change becomes a CSV row of its text values (``pg.tuplecsv``) typed at the roll
(``pg.csvtext``). Positions are (commit LSN, LSN of the change); a key change lands as a delete at
(commit, lsn, 0) and a create at (commit, lsn, 1), so that the two keep their order by position alone.
Logical decoding messages are not events of any collection: they only move the landed position (a
roll manifest with no file), which is what the Airflow sensor's fence needs.

Durable as ``eventlog.writer`` lands: a roll writes every collection's file, then the roll manifest
naming them and the position they complete; only a manifest makes files landed, and the landed
position is the greatest a manifest names.
"""

from __future__ import annotations

from cdc_backfill.capture.postgres.changes import (
    DELETE,
    INSERT,
    TRUNCATE,
    UPDATE,
    Encoded,
    RelationSchema,
    SinkOptions,
    Txn,
)
from cdc_backfill.eventlog.schema import LogVersion
from cdc_backfill.landing.event_log import describe
from cdc_backfill.landing.manifests import landed_log_position
from cdc_backfill.landing.writer import LogWriter
from cdc_backfill.pg import pgoutput
from cdc_backfill.pg.tuplecsv import tuple_csv
from cdc_backfill.pgtypes import PgColumn

EVENT_BYTES = 100  # about, an event of the log: a roll of roll_bytes holds roll_bytes // EVENT_BYTES


class LogRelation:
    """One relation as the sink encodes it: what ``describe`` returns, and the loop calls ``encode`` of."""

    __slots__ = ("collection", "empty_line", "encode", "encode_insert", "key_idx", "names", "version")

    def __init__(
        self, collection: str, names: list[str], key_idx: tuple[int, ...], version: LogVersion
    ) -> None:
        self.collection = collection
        self.names = names
        self.key_idx = key_idx
        self.version = version  # the log schema version its events go to
        self.empty_line = b"," * (len(names) - 1) + b"\n"  # a truncate's row: every field empty
        # the C encoder itself, no method around it: (CSV line, unchanged indexes, key fields, position);
        # an insert's event needs no key fields
        self.encode = self.encode_insert = tuple_csv


class TypedLogSink:
    """The capture's typed event log sink: events buffered per collection by a ``LogWriter``, landed at
    each roll. ``open`` is called once the slot is the loop's; every write follows."""

    def __init__(self, options: SinkOptions) -> None:
        self.landing = options.landing
        self.origin = f"capture:{options.slot}"
        self._roll = (max(1, options.roll_bytes // EVENT_BYTES), options.roll_seconds)
        self.writer: LogWriter = None  # type: ignore[assignment]  # made by open()
        self._versions: dict[str, LogVersion] = {}  # each collection's current log schema version

    def landed(self) -> tuple[int, ...]:
        """The landed position: the loop skips every event at or before it."""
        return landed_log_position(self.landing) or (0, 0)

    def open(self) -> None:
        # only once the slot is the loop's: a writer clears files no manifest names yet, which a
        # capture holding the slot may be about to name
        self.writer = LogWriter(self.landing, self.origin, *self._roll)

    def describe(self, schema: RelationSchema) -> LogRelation:
        coll = schema.collection
        columns = schema.relation.columns
        pg_columns = [PgColumn(c.name, t, c.type_oid) for c, t in zip(columns, schema.types, strict=True)]
        version = describe(self.landing, coll, pg_columns, schema.key)
        if self.writer.has(coll) and self._versions.get(coll) != version:
            self.writer.roll()  # its buffered events belong to the earlier schema version
        self._versions[coll] = version
        return LogRelation(coll, [c.name for c in columns], schema.key_idx, version)

    def begin(self, st: Txn) -> None:
        pass  # nothing kept per transaction: an event's position and time come with it

    def write(
        self, rel: LogRelation, st: Txn, lsn: int, op: str, new: Encoded | None, old: Encoded | None,
        old_is_key: bool,
    ) -> int:  # fmt: skip
        """A row change at (``st.commit_lsn``, ``lsn``) of ``rel``: ``new`` and ``old`` are what
        ``rel.encode`` returned (``old`` only with an old tuple; ``old_is_key``: it holds only the key).
        Returns how many events it landed: a key change lands two."""
        # encoded tuples are (CSV line, unchanged column indexes, key fields, position)
        if op == INSERT or op == UPDATE:
            line, unchanged, _, _ = new  # type: ignore[misc]
        elif op == DELETE:
            line, unchanged = old[0], None  # type: ignore[index]
        elif op == TRUNCATE:
            line, unchanged = rel.empty_line, None
        else:  # a key change: a delete of the old key, then a create of the new one
            self._row(rel, st, (st.commit_lsn, lsn, 0), DELETE, old[0], None)  # type: ignore[index]
            self._row(rel, st, (st.commit_lsn, lsn, 1), INSERT, new[0], new[1])  # type: ignore[index]
            return 2
        # _row inline: the hot path makes one call into the sink, no more
        self.writer.write_row(
            rel.collection, rel.version, op, (st.commit_lsn, lsn), line, st.ts_ms,
            [rel.names[i] for i in unchanged] if unchanged else None,
        )  # fmt: skip
        return 1

    def _row(
        self, rel: LogRelation, st: Txn, position: tuple[int, ...], op: str, line: bytes,
        unchanged: list[int] | None,
    ) -> None:  # fmt: skip
        self.writer.write_row(
            rel.collection, rel.version, op, position, line, st.ts_ms,
            [rel.names[i] for i in unchanged] if unchanged else None,
        )  # fmt: skip

    def message(self, m: pgoutput.Message, st: Txn, commit: int, lsn: int) -> None:
        # not an event: only the position it stands at, so that the landed position passes it (the
        # Airflow sensor's fence is such a message, in a transaction of its own)
        self.writer.advance((commit, lsn))

    def commit(self, end_lsn: int) -> None:
        self.writer.commit_done(end_lsn)

    @property
    def due(self) -> bool:
        """A roll is due (by size or age)."""
        return self.writer.due

    def roll(self) -> int:
        """Land what is written, durably; return the end LSN the slot may now be told."""
        return self.writer.roll()

    @property
    def files_written(self) -> int:
        return self.writer.files_written

    def abandon(self) -> None:
        """Drop what is not landed (it was not confirmed: it comes again)."""
        self.writer.abandon()
