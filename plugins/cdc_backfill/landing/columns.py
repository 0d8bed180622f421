"""What a collection's columns and key are, from what the landing zone says about it (pure reads of
small metadata files: the typed log's schema document, else the snapshot chunks' Parquet metadata)."""

from __future__ import annotations

import json
from pathlib import Path

from cdc_backfill.lakepath import parquet_schema
from cdc_backfill.landing.event_log import read_schema
from cdc_backfill.landing.layout import (
    LOG_DIR,
    SNAPSHOT_DIR,
    log_schema_file,
    snapshot_dir,
)
from cdc_backfill.pgtypes import PgColumn


def landed_collections(landing: Path, signal_table: str) -> list[str]:
    """Collections the landing zone has chunks or a log for (the signal table left out)."""
    names: set[str] = set()
    logged = landing / LOG_DIR
    if logged.is_dir():
        names |= {p.name for p in logged.iterdir() if log_schema_file(landing, p.name).exists()}
    snaps = landing / SNAPSHOT_DIR
    if snaps.is_dir():
        names |= {p.name for p in snaps.iterdir() if p.is_dir() and any(p.glob("*.parquet"))}
    names.discard(signal_table)
    return sorted(names)


def collection_columns(landing: Path, collection: str) -> tuple[list[PgColumn], list[str]]:
    """(columns, key) from the log's current schema version, else a snapshot chunk's metadata."""
    logged = read_schema(landing, collection)
    if logged is not None and logged.current is not None:
        return list(logged.current.columns), list(logged.key)
    chunks = sorted(snapshot_dir(landing, collection).glob("*.parquet"))
    if chunks:
        meta = parquet_schema(chunks[-1]).metadata
        return [column_of(c) for c in json.loads(meta[b"cdc.columns"])], json.loads(meta[b"cdc.key"])
    raise FileNotFoundError(f"nothing in {landing} describes {collection}: no log schema, no snapshot chunk")


def column_of(doc: dict[str, object]) -> PgColumn:
    """A column of a chunk's metadata."""
    return PgColumn(str(doc["name"]), str(doc["type"]), int(doc["type_oid"]))  # type: ignore[call-overload]
