"""Decoding pgoutput protocol messages (protocol version 1), as the walsender sends them.

Pure Python over ``bytes``: no connection here. Each function reads one message; tuple values stay
as the server's text output (``None`` for NULL, :data:`UNCHANGED` for an unchanged TOASTed value).
The formats are PostgreSQL's "Logical Replication Message Formats".
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

UNCHANGED: Final = object()  # a TOASTed column an UPDATE did not change: its value was not sent

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
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


Tuple = list[object]  # str | None | UNCHANGED per column


def _string(buf: bytes, pos: int) -> tuple[str, int]:
    end = buf.index(0, pos)
    return buf[pos:end].decode("utf-8"), end + 1


def _tuple(buf: bytes, pos: int) -> tuple[Tuple, int]:
    (ncols,) = _I16.unpack_from(buf, pos)
    pos += 2
    values: Tuple = []
    append = values.append
    for _ in range(ncols):
        kind = buf[pos]
        pos += 1
        if kind == 0x74:  # 't' text
            (length,) = _I32.unpack_from(buf, pos)
            pos += 4
            append(buf[pos : pos + length].decode("utf-8"))
            pos += length
        elif kind == 0x6E:  # 'n' null
            append(None)
        elif kind == 0x75:  # 'u' unchanged TOAST
            append(UNCHANGED)
        elif kind == 0x62:  # 'b' binary: only with the binary option, which capture does not ask for
            raise ProtocolError("binary tuple data received; capture asks for text format")
        else:
            raise ProtocolError(f"unknown tuple data kind {kind!r}")
    return values, pos


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


def insert(buf: bytes) -> tuple[int, Tuple]:
    (relid,) = _U32.unpack_from(buf, 1)
    if buf[5] != 0x4E:  # 'N'
        raise ProtocolError("insert without a new tuple")
    new, _ = _tuple(buf, 6)
    return relid, new


def update(buf: bytes) -> tuple[int, str | None, Tuple | None, Tuple]:
    """(relid, 'K'/'O'/None, old tuple or None, new tuple)."""
    (relid,) = _U32.unpack_from(buf, 1)
    kind = buf[5]
    old_kind: str | None = None
    old: Tuple | None = None
    pos = 6
    if kind in (0x4B, 0x4F):  # 'K' key columns of the old row, 'O' the whole old row
        old_kind = chr(kind)
        old, pos = _tuple(buf, 6)
        kind = buf[pos]
        pos += 1
    if kind != 0x4E:
        raise ProtocolError("update without a new tuple")
    new, _ = _tuple(buf, pos)
    return relid, old_kind, old, new


def delete(buf: bytes) -> tuple[int, str, Tuple]:
    (relid,) = _U32.unpack_from(buf, 1)
    kind = buf[5]
    if kind not in (0x4B, 0x4F):
        raise ProtocolError("delete without an old tuple")
    old, _ = _tuple(buf, 6)
    return relid, chr(kind), old


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


UNAVAILABLE_JSON = b'"__debezium_unavailable_value"'  # Debezium's placeholder, as a JSON value


def tuple_json(
    buf: bytes, pos: int, encoders: list[Callable[[bytes], bytes] | None]
) -> tuple[list[bytes], int]:
    """TupleData straight to one JSON value (bytes) per column: the capture's hot path.

    An encoder of None means the server's text already is the JSON value (integers): no call at all.
    """
    (ncols,) = _I16.unpack_from(buf, pos)
    pos += 2
    out: list[bytes] = []
    append = out.append
    unpack = _I32.unpack_from
    for i in range(ncols):
        kind = buf[pos]
        if kind == 0x74:
            (length,) = unpack(buf, pos + 1)
            end = pos + 5 + length
            enc = encoders[i]
            append(buf[pos + 5 : end] if enc is None else enc(buf[pos + 5 : end]))
            pos = end
        elif kind == 0x6E:
            append(b"null")
            pos += 1
        elif kind == 0x75:
            append(UNAVAILABLE_JSON)
            pos += 1
        else:
            raise ProtocolError(f"unexpected tuple data kind {kind!r}")
    return out, pos
