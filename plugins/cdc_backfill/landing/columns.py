"""What a collection's columns and key are, from what the landing zone says about it (pure reads of
small metadata files: the typed log's schema document, else the snapshot chunks' Parquet metadata,
else the JSON capture's ``_schemas``)."""

from __future__ import annotations

import json
from pathlib import Path

from cdc_backfill.lakepath import parquet_schema
from cdc_backfill.landing.layout import (
    LOG_DIR,
    SCHEMA_DIR,
    SNAPSHOT_DIR,
    log_schema_file,
    schema_file,
    snapshot_dir,
)
from cdc_backfill.landing.store import read_schema
from cdc_backfill.pgtypes import PgColumn


def landed_collections(landing: Path, signal_table: str) -> list[str]:
    """Collections the landing zone has chunks, a log or schemas for (the signal table left out)."""
    names: set[str] = set()
    logged = landing / LOG_DIR
    if logged.is_dir():
        names |= {p.name for p in logged.iterdir() if log_schema_file(landing, p.name).exists()}
    snaps = landing / SNAPSHOT_DIR
    if snaps.is_dir():
        names |= {p.name for p in snaps.iterdir() if p.is_dir() and any(p.glob("*.parquet"))}
    schemas = landing / SCHEMA_DIR
    if schemas.is_dir():
        names |= {p.name[: -len(".json")] for p in schemas.glob("*.json")}
    names.discard(signal_table)
    return sorted(names)


def collection_columns(landing: Path, collection: str) -> tuple[list[PgColumn], list[str]]:
    """(columns, key) from the log's current schema version, else a snapshot chunk's metadata, else
    the JSON capture's schema file."""
    logged = read_schema(landing, collection)
    if logged is not None and logged.current is not None:
        return list(logged.current.columns), list(logged.key)
    chunks = sorted(snapshot_dir(landing, collection).glob("*.parquet"))
    if chunks:
        meta = parquet_schema(chunks[-1]).metadata
        return [column_of(c) for c in json.loads(meta[b"cdc.columns"])], json.loads(meta[b"cdc.key"])
    path = schema_file(landing, collection)
    if path.exists():
        doc = json.loads(path.read_text())
        return [column_of(c) for c in doc["columns"]], list(doc["key"])
    raise FileNotFoundError(
        f"nothing in {landing} describes {collection}: no log schema, no snapshot chunk, no _schemas file"
    )


def column_of(doc: dict[str, object]) -> PgColumn:
    """A column of a chunk's metadata or a schema document. Both say ``type_oid``; chunks landed by
    earlier versions said ``oid`` and are still read."""
    oid = doc.get("type_oid", doc.get("oid"))
    return PgColumn(str(doc["name"]), str(doc["type"]), int(oid))  # type: ignore[call-overload]
