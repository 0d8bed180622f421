"""One chunk's I/O: the watermark rows, the ``COPY`` of its rows, their Arrow form as READ events, and
landing them as one Parquet file (docs/design.md §4, steps 1 to 4)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from cdc_backfill.arrowbuf import repeated_string
from cdc_backfill.files import write_parquet
from cdc_backfill.lakepath import LakePath, lake_path, parquet_schema
from cdc_backfill.landing.layout import SNAPSHOT_DIR, snapshot_dir
from cdc_backfill.pg.arrowrows import read_rows
from cdc_backfill.snapshot.shape import META_COLUMNS, SIGNAL_META, TableShape
from cdc_backfill.snapshot.sql import ChunkTable


def write_watermark(conn: Any, signal_sql: str, row_id: str, kind: str, data: str) -> None:
    """Insert a window row into the signal table and commit: the stream carries it at its position."""
    with conn.cursor() as cur:
        cur.execute(f"INSERT INTO {signal_sql} (id, type, data) VALUES (%s, %s, %s)", (row_id, kind, data))
    conn.commit()


def read_chunk(
    conn: Any, adbc_conn: Any, sql: str, params: dict[str, Any], shape: TableShape, key_names: list[str]
) -> pa.Table:
    """The chunk's rows (``sql``, compiled for PostgreSQL, with ``params`` inlined by the watermarks'
    connection ``conn``) read on ``adbc_conn`` as a transaction of its own: it ends before the high
    watermark is written. Columns: the table's, then ``key_names``, the key's text."""
    with conn.cursor() as cur:
        query = cur.mogrify(sql, params).decode()
    return read_rows(adbc_conn, query, shape.columns, key_names)


def chunk_end(rows: pa.Table, ct: ChunkTable, appended: bool) -> list[str | None] | None:
    """The last row's key as text (None for NULL), the next chunk's start: the key's appended text
    columns, else its values as they are; None when the chunk is empty."""
    if not rows.num_rows:
        return None
    names = key_columns(ct) if appended else list(ct.key)
    last = rows.slice(rows.num_rows - 1).select(names).to_pylist()[0]
    return [None if last[n] is None else str(last[n]) for n in names]


def key_columns(ct: ChunkTable) -> list[str]:
    """The names of the chunk key's text columns that a chunk's query appends to each row."""
    return [f"_cdc_k{i}" for i in range(len(ct.key))]


def read_events(
    rows: pa.Table | None, shape: TableShape, chunk_id: str, signal: str | None = None
) -> pa.Table:
    """A chunk's rows (None: no row) as READ events in the collection's Arrow schema (the key's text
    columns a query appended for the next chunk's start, ``chunk_end``, left out)."""
    schema = shape.arrow_schema(signal)
    if rows is None:
        return schema.empty_table()
    table = rows.select([c.name for c in shape.columns])
    n = table.num_rows
    # Constant columns from buffers: built from Python lists they took a third of the conversion's time,
    # and pa.scalar, like pa.array, imports pandas on its first call (0.23 s of a snapshot's first chunk).
    for name, value in zip(META_COLUMNS, ("r", shape.collection, chunk_id), strict=True):
        table = table.append_column(name, repeated_string(value, n))
    return table.cast(schema)


def land_chunk(
    landing: LakePath, shape: TableShape, chunk_id: str, table: pa.Table, compression: str = "zstd"
) -> LakePath:
    """Temporary name, fsync, rename, fsync of the folder: a chunk file is whole or absent. Its footer
    keeps the least and greatest value of the key's columns only (the reconcile reads the chunk's key
    range there); of the other columns nobody reads them, and computing them cost a tenth of the write."""
    folder = snapshot_dir(landing, shape.collection)
    folder.mkdir(parents=True, exist_ok=True)
    keys = dict.fromkeys([*shape.identity, *shape.chunk_key])
    return write_parquet(
        folder / f"{chunk_id}.parquet", table, dictionary=META_COLUMNS, compression=compression,
        statistics=list(keys),
    )  # fmt: skip


def count_chunks(landing: Path, collection: str, signal: str) -> int:
    """How many chunk files of ``signal`` landed for ``collection`` (their footers name the signal)."""
    folder = snapshot_dir(landing, collection)
    if not folder.is_dir():
        return 0
    wanted = signal.encode()
    return sum(
        1 for p in folder.glob("*.parquet") if (parquet_schema(p).metadata or {}).get(SIGNAL_META) == wanted
    )


def remove_partial_chunks(landing: Path, collection: str | None = None) -> None:
    """A chunk file left half-written by a crash was never recorded: its chunk is read again. With a
    collection, only its files: another task may be writing its own right now."""
    if collection:
        stale_files = snapshot_dir(landing, collection).glob(".*.parquet.part")
    else:
        stale_files = (lake_path(landing) / SNAPSHOT_DIR).glob("*/.*.parquet.part")
    for stale in stale_files:
        stale.unlink(missing_ok=True)
