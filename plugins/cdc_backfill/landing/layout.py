"""The names of every folder and file of the landing zone and the state: what every reader and writer
of them uses (pure).

Landing zone: ``<landing>/log/<collection>/v0001/p<first>-<last>.parquet`` the typed event log and
``<landing>/log/<collection>/_schema.json`` its schema document; ``<landing>/stream/`` the JSON files
of other tools (a sink's, ``capture debezium``'s batches) waiting for an ingest;
``<landing>/snapshots/<collection>/<chunk>.parquet`` the READ chunks; ``<landing>/_landing.json`` the landing's identity and the replication slots bound to it.

State: ``<state>/<collection>/`` is a Delta table (``cdc_backfill.state.table``): ``_delta_log/`` names
the Parquet files of each version, which sit in a folder per run (``v000007-<token>/``);
``_cdc_carry/<run folder>/`` holds the events a run held for the next one; ``<state>/_runs/*.json``
each reconcile run's summary.
"""

from __future__ import annotations

import re
from pathlib import Path

from cdc_backfill.lakepath import LakePath, lake_path

STREAM_DIR = "stream"
LOG_DIR = "log"  # the typed event log: <landing>/log/<collection>/v0001/*.parquet and _schema.json
LOG_SCHEMA = "_schema.json"
ROLLS_DIR = "_rolls"
SNAPSHOT_DIR = "snapshots"
STAGING_DIR = "_staging"  # <landing>/log/_staging/<run>/: what an ingest's Spark job writes before naming it
QUARANTINE_DIR = "_quarantine"  # <landing>/_quarantine/ingest-<run>/: records an ingest could not read
DEBEZIUM_DIR = "_debezium"
LANDING_META = "_landing.json"  # the landing's identity and the slots bound to it (capture.binding)
INGESTED_DIR = "_ingested"  # <landing>/_ingested/stream/: the landing's JSON files, once in the log

STREAM_SUFFIXES = (".json", ".jsonl", ".ndjson")  # stream files of any capture

CARRY_DIR = "_cdc_carry"
CARRY_ROWS, CARRY_SIGNALS = "rows", "signals"  # its two parts: the collection's log rows, signal rows
REMOVED_DIR = "_cdc_removed"  # beside a state: the removals it remembers (reconcile.spark.removals)
RUNS_DIR = "_runs"


def landing_meta_file(landing: LakePath) -> LakePath:
    return lake_path(landing) / LANDING_META


def stream_dir(landing: LakePath) -> LakePath:
    return lake_path(landing) / STREAM_DIR


def capture_log_files(landing: LakePath) -> list[LakePath]:
    """The typed log's finished files, every collection and version."""
    root = lake_path(landing) / LOG_DIR
    return sorted(root.glob("*/v*/p*.parquet")) if root.is_dir() else []


def log_dir(landing: Path, collection: str) -> LakePath:
    """A collection's typed event log (docs/design.md §5.0)."""
    return lake_path(landing) / LOG_DIR / collection


def log_version_dir(landing: Path, collection: str, version: int) -> LakePath:
    """The log files of one schema version of a collection."""
    return log_dir(landing, collection) / f"v{version:04d}"


def log_schema_file(landing: Path, collection: str) -> LakePath:
    return log_dir(landing, collection) / LOG_SCHEMA


def rolls_dir(landing: LakePath) -> LakePath:
    """The typed log's roll manifests: a log file counts as landed only once a manifest names it."""
    return lake_path(landing) / LOG_DIR / ROLLS_DIR


def roll_manifest_name(last: bytes) -> str:
    """A roll manifest, named by the position key of the last event it lands (names sort as positions)."""
    return f"r{last.hex()}.json"


def log_file_name(first: bytes, last: bytes) -> str:
    """A log file named by the position keys of its first and last event: hex keeps their byte order."""
    return f"p{first.hex()}-{last.hex()}.parquet"


def ingest_file_name(first: bytes, last: bytes, run: str, n: int) -> str:
    """A log file an ingest wrote: as a capture's, then the ingest run and the file's number in it."""
    return f"p{first.hex()}-{last.hex()}-i{run}-{n:05d}.parquet"


def log_file_span(name: str) -> tuple[bytes, bytes] | None:
    """The first and last position keys a log file's name (:func:`log_file_name`,
    :func:`ingest_file_name`) gives; None for a name of another form."""
    stem = name.rsplit("/", 1)[-1]
    if not stem.startswith("p") or not stem.endswith(".parquet"):
        return None
    parts = stem[1 : -len(".parquet")].split("-")
    try:
        return bytes.fromhex(parts[0]), bytes.fromhex(parts[1])
    except (IndexError, ValueError):
        return None


def ingest_manifest_name(last: bytes, run: str) -> str:
    """An ingest's roll manifest: as a capture's, then the run (two runs may end at one position)."""
    return f"r{last.hex()}-i{run}.json"


def is_ingest_file(name: str) -> bool:
    """A log file or manifest an ingest wrote (a capture leaves those to the ingest that wrote them)."""
    return "-i" in name


def staging_dir(landing: LakePath) -> LakePath:
    return lake_path(landing) / LOG_DIR / STAGING_DIR


def typed_stage_dir(stage: LakePath | str, collection: str) -> LakePath:
    """Where an ingest's workers write the log files they typed themselves (``ingest.arrow_typing``), inside the
    run's staging folder, beside Spark's own output of each collection."""
    return lake_path(stage) / "_typed" / collection


def quarantine_dir(landing: LakePath) -> LakePath:
    return lake_path(landing) / QUARANTINE_DIR


def ingested_stream_dir(landing: LakePath) -> LakePath:
    return lake_path(landing) / INGESTED_DIR / STREAM_DIR


def debezium_dir(landing: LakePath) -> LakePath:
    """Debezium's own files in a landing its connector writes: offsets, schema history, notifications."""
    return lake_path(landing) / DEBEZIUM_DIR


def snapshot_dir(landing: Path, collection: str) -> LakePath:
    return lake_path(landing) / SNAPSHOT_DIR / collection


def runs_dir(state: LakePath) -> LakePath:
    """Where each reconcile run leaves its summary."""
    return lake_path(state) / RUNS_DIR


def collection_dir(state: Path, collection: str) -> LakePath:
    return lake_path(state) / collection


# `capture debezium`'s batch files in stream/: their first and last delivery offsets, zero-padded so that
# names sort in order
DEBEZIUM_BATCH_NAME = re.compile(r"^dbz-(\d{20})-(\d{20})\.jsonl$")


def batch_file_name(first: int, last: int) -> str:
    """A ``capture debezium`` batch's file name."""
    return f"dbz-{first:020d}-{last:020d}.jsonl"
