"""Decoding pgoutput protocol messages (protocol version 1), as the walsender sends them.

Pure Python over ``bytes``: no connection here. Each function reads one message. Row messages'
tuples (Insert, Update, Delete) are decoded straight to CSV lines by ``cdc_backfill.pg.tuplecsv``.
The formats are PostgreSQL's "Logical Replication Message Formats".
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")
_BEGIN = struct.Struct(">QqI")  # final lsn, commit time, xid
_COMMIT = struct.Struct(">bQQq")  # flags, commit lsn, end lsn, commit time

# PostgreSQL timestamps count microseconds from 2000-01-01; Unix from 1970-01-01.
PG_EPOCH_OFFSET_US = 946_684_800_000_000


class ProtocolError(ValueError):
    """A message this decoder does not understand; capture stops rather than write a wrong event."""


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type_oid: int
    typmod: int
    is_key: bool  # flagged as part of the replica identity


@dataclass(frozen=True, slots=True)
class Relation:
    relid: int
    namespace: str
    name: str
    replica_identity: str  # d default, f full, i index, n nothing
    columns: tuple[Column, ...]


@dataclass(frozen=True, slots=True)
class Begin:
    final_lsn: int  # the LSN of the commit record: the transaction's commit position
    commit_time_us: int  # Unix microseconds
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    commit_lsn: int
    end_lsn: int  # confirm this once the transaction is durable: the slot resumes after it
    commit_time_us: int


@dataclass(frozen=True, slots=True)
class Message:
    transactional: bool
    lsn: int
    prefix: str
    content: bytes


def _string(buf: bytes, pos: int) -> tuple[str, int]:
    end = buf.index(0, pos)
    return buf[pos:end].decode("utf-8"), end + 1


def begin(buf: bytes) -> Begin:
    final_lsn, ts, xid = _BEGIN.unpack_from(buf, 1)
    return Begin(final_lsn, ts + PG_EPOCH_OFFSET_US, xid)


def commit(buf: bytes) -> Commit:
    _flags, commit_lsn, end_lsn, ts = _COMMIT.unpack_from(buf, 1)
    return Commit(commit_lsn, end_lsn, ts + PG_EPOCH_OFFSET_US)


def relation(buf: bytes) -> Relation:
    (relid,) = _U32.unpack_from(buf, 1)
    namespace, pos = _string(buf, 5)
    name, pos = _string(buf, pos)
    replident = chr(buf[pos])
    (ncols,) = _I16.unpack_from(buf, pos + 1)
    pos += 3
    cols = []
    for _ in range(ncols):
        flags = buf[pos]
        colname, pos = _string(buf, pos + 1)
        oid, typmod = struct.unpack_from(">Ii", buf, pos)
        pos += 8
        cols.append(Column(colname, oid, typmod, bool(flags & 1)))
    return Relation(relid, namespace or "pg_catalog", name, replident, tuple(cols))


def truncate(buf: bytes) -> tuple[list[int], int]:
    """(relids, options: 1 cascade, 2 restart identity)."""
    (nrels,) = _I32.unpack_from(buf, 1)
    options = buf[5]
    relids = list(struct.unpack_from(f">{nrels}I", buf, 6))
    return relids, options


def message(buf: bytes) -> Message:
    flags = buf[1]
    (lsn,) = _U64.unpack_from(buf, 2)
    prefix, pos = _string(buf, 10)
    (length,) = _I32.unpack_from(buf, pos)
    pos += 4
    return Message(bool(flags & 1), lsn, prefix, bytes(buf[pos : pos + length]))
