"""What a collection's columns and key are, from what the landing zone says about it (pure reads of
small metadata files: the snapshot chunks' Parquet metadata, else the capture's ``_schemas``)."""

from __future__ import annotations

import json
from pathlib import Path

from cdc_backfill.layout import SCHEMA_DIR, SNAPSHOT_DIR, schema_file, snapshot_dir
from cdc_backfill.pgtypes import PgColumn


def landed_collections(landing: Path, signal_collection: str) -> list[str]:
    """Collections the landing zone has chunks or schemas for (the signal table left out)."""
    names: set[str] = set()
    snaps = landing / SNAPSHOT_DIR
    if snaps.is_dir():
        names |= {p.name for p in snaps.iterdir() if p.is_dir() and any(p.glob("*.parquet"))}
    schemas = landing / SCHEMA_DIR
    if schemas.is_dir():
        names |= {p.name[: -len(".json")] for p in schemas.glob("*.json")}
    names.discard(signal_collection)
    return sorted(names)


def collection_columns(landing: Path, collection: str) -> tuple[list[PgColumn], list[str]]:
    """(columns, key) from a snapshot chunk's metadata, else from the capture's schema file."""
    chunks = sorted(snapshot_dir(landing, collection).glob("*.parquet"))
    if chunks:
        import pyarrow.parquet as pq

        meta = pq.read_schema(chunks[-1]).metadata
        return [column_of(c) for c in json.loads(meta[b"cdc.columns"])], json.loads(meta[b"cdc.key"])
    path = schema_file(landing, collection)
    if path.exists():
        doc = json.loads(path.read_text())
        return [column_of(c) for c in doc["columns"]], list(doc["key"])
    raise FileNotFoundError(
        f"nothing in {landing} describes {collection}: no snapshot chunk, no _schemas file"
    )


def column_of(doc: dict[str, object]) -> PgColumn:
    """A column of a chunk's metadata or a schema document. Both say ``type_oid``; chunks landed by
    earlier versions said ``oid`` and are still read."""
    oid = doc.get("type_oid", doc.get("oid"))
    return PgColumn(str(doc["name"]), str(doc["type"]), int(oid))  # type: ignore[call-overload]
