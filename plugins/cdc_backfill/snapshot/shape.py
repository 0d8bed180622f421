"""A collection as the snapshot engine reads it: its columns, the key of its events and the chunk key,
read once from the catalog when the collection starts."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
import sqlalchemy as sa

from cdc_backfill.names import split_collection
from cdc_backfill.pg.arrowrows import plain_key, text_columns
from cdc_backfill.pg.catalog import primary_key, table_columns, unique_keys
from cdc_backfill.pgtypes import PgColumn, arrow_type
from cdc_backfill.signals.validate import CollectionPlan
from cdc_backfill.snapshot.sql import ChunkTable

META_COLUMNS = ("_cdc_op", "_cdc_collection", "_cdc_chunk_id")
SIGNAL_META = b"cdc.signal"  # the snapshot (its signal id) a chunk file belongs to


class SnapshotError(RuntimeError):
    """A collection cannot be snapshotted; the message says why."""


@dataclass(frozen=True)
class TableShape:
    """A collection as the engine reads it."""

    collection: str
    schema: str
    name: str
    columns: tuple[PgColumn, ...]
    identity: tuple[str, ...]  # the key of its events: the primary key, else the surrogate key
    chunk_key: tuple[str, ...]  # the columns chunks are ordered by: the surrogate key, else the primary key

    def chunk_table(self) -> ChunkTable:
        by_name = {c.name: c for c in self.columns}
        nullable = len(self.chunk_key) == 1 and by_name[self.chunk_key[0]].nullable
        return ChunkTable(
            self.schema,
            self.name,
            tuple(c.name for c in self.columns),
            self.chunk_key,
            tuple(by_name[k].type for k in self.chunk_key),
            nullable_key=nullable,
            text_columns=text_columns(self.columns),
        )

    def plain_key(self) -> bool:
        """Whether the chunk key's lake values give the next chunk's start as they are (else each chunk's
        query appends the key's text)."""
        by_name = {c.name: c for c in self.columns}
        return all(plain_key(by_name[k]) for k in self.chunk_key)

    def arrow_schema(self, signal: str | None = None) -> pa.Schema:
        fields = [pa.field(c.name, arrow_type(c)) for c in self.columns]
        fields += [pa.field(m, pa.string()) for m in META_COLUMNS]
        meta = {
            "cdc.collection": self.collection,
            "cdc.key": json.dumps(list(self.identity)),
            "cdc.chunk_key": json.dumps(list(self.chunk_key)),
            "cdc.columns": json.dumps(
                [{"name": c.name, "type": c.type, "type_oid": c.oid} for c in self.columns]
            ),
        }
        if signal is not None:
            meta[SIGNAL_META.decode()] = signal
        return pa.schema(fields, metadata=meta)


def table_shape(conn: sa.Connection, plan: CollectionPlan) -> TableShape:
    schema, table = split_collection(plan.collection)
    cols = table_columns(conn, schema, table)
    if not cols:
        raise SnapshotError(f"{plan.collection} no longer exists")
    pk = primary_key(conn, schema, table)
    if plan.key != pk:
        # Keyset pagination over a column that repeats would skip rows: the chunk key must be unique.
        if tuple(plan.key) not in unique_keys(conn, schema, table):
            raise SnapshotError(
                f"surrogate-key {', '.join(plan.key)} of {plan.collection} has no unique index: chunks by a "
                "column that repeats would skip rows; create a unique index or choose a unique column"
            )
    identity = pk or plan.key
    return TableShape(plan.collection, schema, table, cols, identity, plan.key)
