"""Reading and writing a collection's typed event log: its schema document and its Parquet files, each
written whole (temporary name, fsync, rename, fsync of the folder) so that a crash leaves a file or
nothing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from cdc_backfill.eventlog.schema import POSITION, LogSchema, LogVersion
from cdc_backfill.files import write_atomically, write_parquet
from cdc_backfill.landing.layout import log_dir, log_file_name, log_schema_file, log_version_dir
from cdc_backfill.pgtypes import PgColumn


def read_schema(landing: Path, collection: str) -> LogSchema | None:
    path = log_schema_file(landing, collection)
    if not path.exists():
        return None
    return LogSchema.from_json(json.loads(path.read_text()))


def describe(landing: Path, collection: str, columns: Sequence[PgColumn], key: Sequence[str]) -> LogVersion:
    """Record the collection's columns (a new schema version when they changed) and return the version
    its next events go to."""
    before = read_schema(landing, collection) or LogSchema(collection, tuple(key))
    after, version = before.with_columns(columns, key)
    if after is not before:
        log_dir(landing, collection).mkdir(parents=True, exist_ok=True)
        write_atomically(log_schema_file(landing, collection), after.dumps())
    return version


def next_version(
    landing: Path, collection: str, columns: Sequence[PgColumn], key: Sequence[str]
) -> LogVersion:
    """The version ``describe`` would put the collection's next events in, written nowhere."""
    before = read_schema(landing, collection) or LogSchema(collection, tuple(key))
    return before.with_columns(columns, key)[1]


def write_events(
    landing: Path, collection: str, version: LogVersion, events: pa.Table, in_order: bool = False
) -> Path | None:
    """One log file of events in ``version``'s schema, named by its first and last position; None for
    no events. Its rows are written in position order (``in_order``: they already are)."""
    if events.num_rows == 0:
        return None
    table = events.select(version.arrow_schema().names).cast(version.arrow_schema())
    if not in_order:
        table = table.sort_by(POSITION)
    span = pc.min_max(table.column(POSITION))
    folder = log_version_dir(landing, collection, version.version)
    folder.mkdir(parents=True, exist_ok=True)
    return write_parquet(folder / log_file_name(span["min"].as_py(), span["max"].as_py()), table)


def log_files(landing: Path, collection: str) -> list[Path]:
    """Every finished log file of the collection, all versions, in name order within a version."""
    root = log_dir(landing, collection)
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob("v*/p*.parquet"))
