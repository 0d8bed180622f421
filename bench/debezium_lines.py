"""Debezium PostgreSQL JSON lines, as a Kafka Connect sink lands the connector's key and value (JSON
converter, schemas off): the stream files the reconcile bench ingests. Each table's source block is
built once per transaction; each event appends its own LSN."""

from __future__ import annotations

import os
from pathlib import Path

import orjson


def source_prefix(*, ts_ms: int, db: str, schema: str, table: str, txid: int, commit_lsn: int) -> bytes:
    """A row event's source block up to ``"lsn":``, in Debezium's order."""
    src = {
        "version": "cdc_backfill-bench", "connector": "postgresql", "name": "cdc_backfill", "ts_ms": ts_ms,
        "snapshot": "false", "db": db, "schema": schema, "table": table, "txId": txid, "commit_lsn": commit_lsn,
    }  # fmt: skip
    return orjson.dumps(src)[:-1] + b',"lsn":'


def line_tail(ts_ms: int) -> bytes:
    """What follows a row event's op: the event's ``ts_ms`` and the line's end."""
    return b'","ts_ms":' + str(ts_ms).encode() + b"}}\n"


def row_line(key: bytes, before: bytes, after: bytes, prefix: bytes, lsn: int, op: str, tail: bytes) -> bytes:
    """One row event: the record's key and value."""
    return b"".join(
        (b'{"key":', key, b',"value":{"before":', before, b',"after":', after, b',"source":', prefix,
         str(lsn).encode(), b'},"op":"', op.encode(), tail)
    )  # fmt: skip


class StreamFiles:
    """Lines appended to ``<folder>/stream/`` files of about ``roll_bytes`` each, named in order."""

    def __init__(self, folder: Path, roll_bytes: int) -> None:
        self.stream = folder / "stream"
        self.stream.mkdir(parents=True, exist_ok=True)
        self.roll_bytes = roll_bytes
        self.parts: list[bytes] = []
        self.size = 0
        self.files_written = 0

    def write(self, line: bytes) -> None:
        self.parts.append(line)
        self.size += len(line)

    @property
    def due(self) -> bool:
        return self.size >= self.roll_bytes

    def roll(self) -> None:
        if not self.parts:
            return
        self.files_written += 1
        path = self.stream / f"bench-{self.files_written:06d}.jsonl"
        tmp = path.with_name(f".{path.name}.part")
        tmp.write_bytes(b"".join(self.parts))
        os.replace(tmp, path)
        self.parts, self.size = [], 0
