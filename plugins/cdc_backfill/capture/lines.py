"""The line layout of the JSON-lines landing (``capture postgres --format json``): each row event is
what Debezium's PostgreSQL connector writes (JSON converter, schemas off) plus ``source.commit_lsn``;
the benchmark builds its JSON stream with these functions too. Also each table's schema document, and
how a relation's tuples become JSON (:class:`JsonRelation`). Pure: the sink that writes the lines is
``capture.landing.JsonLinesSink``."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdc_backfill.pg import pgoutput
from cdc_backfill.pg.fastpath import encode_tuple


@dataclass
class JsonRelation:
    """One relation as the JSON-lines sink encodes it (a ``capture.sinks.SinkRelation``)."""

    collection: str
    schema: str
    table: str
    names: list[str]
    kinds: bytes  # per column, the fastpath kind code
    encoders: tuple[Callable[[bytes], bytes], ...]
    key_idx: tuple[int, ...]
    name_json: tuple[bytes, ...] = field(init=False)  # b'"column":' per column

    def __post_init__(self) -> None:
        self.name_json = tuple(orjson.dumps(n) + b":" for n in self.names)

    def encode(self, buf: bytes, pos: int, key_idx: tuple[int, ...]) -> tuple[bytes, bytes, int]:
        """(row JSON, JSON of the fields at ``key_idx``, position after the tuple)."""
        return encode_tuple(buf, pos, self.kinds, self.encoders, self.name_json, key_idx)

    def encode_insert(self, buf: bytes, pos: int) -> tuple[bytes, bytes, int]:
        """An insert's new tuple: its event has a key too."""
        return encode_tuple(buf, pos, self.kinds, self.encoders, self.name_json, self.key_idx)


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
    """Every event's source block without its ``lsn``, in Debezium's order."""
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
    """One row event (or truncate) as the capture lands it; the benchmark builds its stream with this
    function too."""
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


def message_line(
    m: pgoutput.Message,
    *,
    version: str,
    name: str,
    db: str,
    ts_ms: int,
    txid: int | None,
    commit_lsn: int,
    lsn: int,
) -> bytes:
    """A logical decoding message (``pg_logical_emit_message``) as an event line, its content in base64."""
    src = source_block(
        version=version, name=name, ts_ms=ts_ms, db=db, schema="", table="", txid=txid, commit_lsn=commit_lsn
    )
    src["lsn"] = lsn
    value = {
        "source": src,
        "op": "m",
        "ts_ms": int(time.time() * 1000),
        "message": {"prefix": m.prefix, "content": base64.b64encode(m.content).decode()},
    }
    return orjson.dumps({"key": {"prefix": m.prefix}, "value": value}) + b"\n"


def schema_document(collection: str, key: list[str], columns: list[Any], types: list[str]) -> bytes:
    """A table's schema document (docs/design.md §8): its key and, per column, name, type, ``type_oid`` and
    ``typmod`` as the relation message gave them."""
    doc = {
        "collection": collection,
        "key": key,
        "columns": [
            {"name": c.name, "type": t, "type_oid": c.type_oid, "typmod": c.typmod}
            for c, t in zip(columns, types, strict=True)
        ],
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2)
