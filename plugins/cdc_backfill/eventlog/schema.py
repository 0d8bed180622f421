"""The typed event log's columns and its schema document (pure).

A log file holds one collection's events, one row each:

- ``_cdc_position`` (binary): ``events.positions.position_key`` of the event's position, so that one
  unsigned byte comparison orders events (Spark, Parquet statistics, DuckDB);
- ``_cdc_op`` (string): ``c``, ``u``, ``d``, ``r`` or ``t``;
- ``_cdc_ts_ms`` (int64): the source's timestamp, when it sends one;
- ``_cdc_unchanged`` (list<string>): the columns the event did not send (TOAST), whose value stays;
- ``_cdc_origin`` (string) and ``_cdc_line`` (int64): where the event came from (a file and its line,
  or the capture and the event's order in its file), for tracing and the quarantine;
- the collection's columns in their lake types: the row after the change (``c``, ``u``, ``r``), the
  key's values (``d``), nothing (``t``).

The schema document (``layout.log_schema_file``) names the collection's key and, per schema version,
its columns with the source's type name and the lake type; a new column or a changed type starts a
new version, and a version's files live in a folder of their own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from cdc_backfill.pgtypes import PgColumn, arrow_type

POSITION = "_cdc_position"
OP = "_cdc_op"
TS_MS = "_cdc_ts_ms"
UNCHANGED = "_cdc_unchanged"
ORIGIN = "_cdc_origin"
LINE = "_cdc_line"
META_FIELDS = (
    pa.field(POSITION, pa.binary(), nullable=False),
    pa.field(OP, pa.string(), nullable=False),
    pa.field(TS_MS, pa.int64()),
    pa.field(UNCHANGED, pa.list_(pa.string())),
    pa.field(ORIGIN, pa.string()),
    pa.field(LINE, pa.int64()),
)
OPS = ("c", "u", "d", "r", "t")  # the ops a collection's log keeps: row changes and truncates


class LogSchemaError(ValueError):
    """A schema document that cannot be read or extended; the message says why."""


@dataclass(frozen=True)
class LogVersion:
    """One schema version of a collection's log: its columns as the source typed them."""

    version: int
    columns: tuple[PgColumn, ...]

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([*META_FIELDS, *(pa.field(c.name, arrow_type(c)) for c in self.columns)])

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "columns": [
                {"name": c.name, "type": c.type, "type_oid": c.oid, "lake_type": str(arrow_type(c))}
                for c in self.columns
            ],
        }


@dataclass(frozen=True)
class LogSchema:
    """A collection's schema document: its key and every schema version, oldest first."""

    collection: str
    key: tuple[str, ...]
    versions: tuple[LogVersion, ...] = field(default_factory=tuple)

    @property
    def current(self) -> LogVersion | None:
        return self.versions[-1] if self.versions else None

    def with_columns(self, columns: Sequence[PgColumn], key: Sequence[str]) -> tuple[LogSchema, LogVersion]:
        """The document after the source (re)described the collection, and the version its events go
        to: the current one when nothing changed, else a new one."""
        cols = tuple(columns)
        missing = [k for k in key if k not in {c.name for c in cols}]
        if missing:
            raise LogSchemaError(
                f"{self.collection}: key column(s) {', '.join(missing)} not among its columns"
            )
        now = self.current
        if now is not None and same_types(now.columns, cols) and tuple(key) == self.key:
            return self, now
        version = LogVersion((now.version if now else 0) + 1, cols)
        return LogSchema(self.collection, tuple(key), (*self.versions, version)), version

    def to_json(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "key": list(self.key),
            "versions": [v.to_json() for v in self.versions],
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> LogSchema:
        try:
            versions = tuple(
                LogVersion(
                    int(v["version"]),
                    tuple(PgColumn(str(c["name"]), str(c["type"]), int(c["type_oid"])) for c in v["columns"]),
                )
                for v in doc["versions"]
            )
            return cls(str(doc["collection"]), tuple(str(k) for k in doc["key"]), versions)
        except (KeyError, TypeError, ValueError) as exc:
            raise LogSchemaError(f"not a log schema document: {type(exc).__name__}: {exc}") from None

    def dumps(self) -> bytes:
        return json.dumps(self.to_json(), indent=2).encode()


def same_types(a: Sequence[PgColumn], b: Sequence[PgColumn]) -> bool:
    """Same column names, in the same order, with the same source types (nullability aside)."""
    return [(c.name, c.type) for c in a] == [(c.name, c.type) for c in b]
