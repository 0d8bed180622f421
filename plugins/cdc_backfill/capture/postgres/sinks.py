"""What the PostgreSQL capture's loop (``capture.postgres.loop``) hands its sink, and what it asks of it.

The loop decodes each pgoutput message once; its sink lands what it decoded as the typed event log
(``capture.postgres.log_sink``). The sink encodes a relation's tuples its own way (the C encoder ``tuple_csv``), so
describing a relation returns the sink's :class:`SinkRelation`, whose ``encode`` (``encode_insert`` for an insert's tuple) the loop calls on
each tuple; the loop reads only the last two items of what it returns (the key, to see a key change,
and where the next tuple starts) and hands the rest back to the sink's ``write`` untouched: the hot
path allocates nothing of its own and makes one call into the sink.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cdc_backfill.pg import pgoutput

# A row change as the loop decoded it. The first four are the ops a sink lands; a key change is not
# landed as such: a sink lands it as a delete of the old key then a create of the new one.
INSERT = "c"
UPDATE = "u"
DELETE = "d"
TRUNCATE = "t"
KEY_CHANGE = "k"

# What a relation's ``encode`` returns for one tuple: the sink's own values, then the tuple's key fields
# and the position in the message after the tuple.
Encoded = tuple[Any, ...]


@dataclass(frozen=True)
class SinkOptions:
    """What a sink is made from: where it lands, for which slot, and how large a roll grows."""

    landing: Path
    slot: str
    roll_bytes: int
    roll_seconds: float


@dataclass(frozen=True)
class RelationSchema:
    """A relation message with what the source's catalog adds: each column's type and the key."""

    relation: pgoutput.Relation
    collection: str
    types: list[str]  # per column, format_type(): "integer", "numeric(12,2)", ...
    key: list[str]  # the primary key's columns, else the replica identity's
    key_idx: tuple[int, ...]  # the key's column indexes


class Txn:
    """What the loop knows of the transaction it is in."""

    __slots__ = ("commit_lsn", "in_txn", "maybe_landed", "ts_ms", "xid")

    def __init__(self) -> None:
        self.in_txn = False
        self.maybe_landed = False  # committed at or before the landed position: may hold events to skip
        self.commit_lsn = 0
        self.xid = 0
        self.ts_ms = 0

    def begin(self, b: pgoutput.Begin) -> None:
        self.in_txn = True
        self.commit_lsn = b.final_lsn
        self.xid = b.xid
        self.ts_ms = b.commit_time_us // 1000


class SinkRelation(Protocol):
    """One relation as its sink encodes it."""

    collection: str
    key_idx: tuple[int, ...]

    def encode(self, buf: bytes, pos: int, key_idx: tuple[int, ...], /) -> Encoded:
        """The TupleData at ``pos``: (the sink's values..., the fields at ``key_idx``, position after it)."""
        ...

    def encode_insert(self, buf: bytes, pos: int, /) -> Encoded:
        """An insert's new tuple, with the key fields its event needs (none, when it needs none)."""
        ...


class CaptureSink(Protocol):
    """Where the capture lands. ``open`` is called once the slot is the loop's; every write follows."""

    def landed(self) -> tuple[int, ...]:
        """The landed position: the loop skips every event at or before it."""
        ...

    def open(self) -> None: ...

    def describe(self, schema: RelationSchema) -> SinkRelation:
        """A relation message: its schema recorded, how its rows are encoded from now on."""
        ...

    def begin(self, st: Txn) -> None: ...

    def write(
        self, rel: Any, st: Txn, lsn: int, op: str, new: Encoded | None, old: Encoded | None,
        old_is_key: bool,
    ) -> int:  # fmt: skip
        """A row change at (``st.commit_lsn``, ``lsn``) of ``rel`` (what ``describe`` returned): ``new``
        and ``old`` are what ``rel.encode`` returned (``old`` only with an old tuple; ``old_is_key``: it
        holds only the key). Returns how many events it landed: a key change lands two."""
        ...

    def message(self, m: pgoutput.Message, st: Txn, commit: int, lsn: int) -> None:
        """A logical decoding message at (``commit``, ``lsn``), a drain marker's excepted."""
        ...

    def commit(self, end_lsn: int) -> None: ...

    @property
    def due(self) -> bool:
        """A roll is due (by size or age)."""
        ...

    def roll(self) -> int:
        """Land what is written, durably; return the end LSN the slot may now be told."""
        ...

    @property
    def files_written(self) -> int: ...

    def abandon(self) -> None:
        """Drop what is not landed (it was not confirmed: it comes again)."""
        ...


class WriterSink:
    """What both sinks hand to their file writer as it is (``writer``, made by ``open``): the end of a
    transaction, whether a roll is due, the roll itself, the files written, and abandoning what was not
    rolled."""

    writer: Any

    def commit(self, end_lsn: int) -> None:
        self.writer.commit_done(end_lsn)

    @property
    def due(self) -> bool:
        return self.writer.due

    def roll(self) -> int:
        return self.writer.roll()

    @property
    def files_written(self) -> int:
        return self.writer.files_written

    def abandon(self) -> None:
        self.writer.abandon()
