"""What the PostgreSQL capture's loop (``capture.postgres.loop``) decodes and hands its sink
(``capture.postgres.log_sink``): a row change's op, a relation's schema, the transaction it is in, and
what the sink is made from.

The sink encodes a relation's tuples itself (the C encoder ``tuple_csv``): describing a relation returns
the sink's ``LogRelation``, whose ``encode`` (``encode_insert`` for an insert's tuple) the loop calls on
each tuple. The loop reads only the last two items of what it returns (the key, to see a key change,
and where the next tuple starts) and hands the rest back to the sink's ``write`` untouched: the hot
path allocates nothing of its own and makes one call into the sink.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
