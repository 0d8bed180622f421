"""The landing's roll manifests: the commit of the typed log (docs/design.md §5.0). A log file counts as
landed only once a manifest names it; every writer (the PostgreSQL capture's ``LogWriter``, ``ingest``,
``capture kafka``) commits through one, and every reader finds the log through them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cdc_backfill.files import write_atomically, write_new
from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.layout import (
    LOG_DIR,
    ingest_manifest_name,
    is_ingest_file,
    roll_manifest_name,
    rolls_dir,
)

# Debezium's notifications a `capture kafka` run read, kept whole in its manifest
NOTES_KEY = "debezium_notifications"
# the schema changes an ingest read (DataWorks' DDL records, with their text), in its manifest
SCHEMA_CHANGES = "schema_changes"


def commit_roll(landing: Path, last: bytes, manifest: dict[str, Any]) -> None:
    """The capture's commit: its manifest (``last``: the position key it completes), written whole. The
    capture is the only writer of its names, so a manifest written again after a crash replaces the
    same one."""
    folder = rolls_dir(landing)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomically(folder / roll_manifest_name(last), json.dumps(manifest).encode())


def commit_ingest(landing: Path, last: bytes, run: str, manifest: dict[str, Any]) -> None:
    """An ingest's (or a ``capture kafka`` round's) commit: its manifest, named by ``last`` and the run,
    written only if no file has its name (on S3 a conditional PUT). Before it nothing of the run counts;
    after it every record it names is landed.

    A batch whose events all come before a manifest landed already (DataWorks' records arrive out of
    ``sequenceId`` order) is named by that manifest's position instead: a reconcile reads the manifests
    named after its state's position, and must find this one too (its events then compete with the
    state by position, docs/design.md §6 rule 6). Ingests commit one at a time, under their lock."""
    folder = rolls_dir(landing)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ingest_manifest_name(max(last, greatest_named(folder)), run)
    if not write_new(path, json.dumps(manifest).encode()):  # the run's name is its own: never taken twice
        raise RuntimeError(f"{path} exists already: another ingest ran as {run}; run this one again")


def greatest_named(folder: Path) -> bytes:
    """The greatest position key a manifest in ``folder`` is named by (b"" for none)."""
    names = [p.stem[1:].split("-", 1)[0] for p in folder.glob("r*.json")]
    return max((bytes.fromhex(n) for n in names), default=b"")


def roll_manifests(landing: Path, ingest_only: bool = False) -> list[dict[str, Any]]:
    """Every roll manifest of the landing (the capture's and ingest's), in name order; ``ingest_only``:
    those an ingest wrote (``ingest``, ``capture kafka``), without reading the capture's."""
    folder = rolls_dir(landing)
    if not folder.is_dir():
        return []
    paths = sorted(p for p in folder.glob("r*.json") if not ingest_only or is_ingest_file(p.name))
    return [json.loads(p.read_text()) for p in paths]


def named_log_files(landing: Path) -> set[str]:
    """The log files (relative to the log folder) that a manifest names: the landed ones."""
    return {f for manifest in roll_manifests(landing) for f in manifest["files"]}


def landed_log_position(landing: Path) -> tuple[int, ...]:
    """The greatest stream position a roll manifest completes; () for none."""
    return max((tuple(m["position"]) for m in roll_manifests(landing)), default=())


def remove_unlanded(landing: Path, ingest: bool = False) -> list[Path]:
    """Delete log files no manifest names and partial files (what a crash left); returns them. A
    capture's (``ingest`` False) and an ingest's are each left to the writer of their kind: the other
    may be running now, about to name its files."""
    root = lake_path(landing) / LOG_DIR
    if not root.is_dir():
        return []
    named = named_log_files(landing)
    gone = []
    for path in sorted(root.glob("*/v*/*")):
        if is_ingest_file(path.name) != ingest:
            continue
        if path.name.endswith(".part") or path.relative_to(root).as_posix() not in named:
            path.unlink()
            gone.append(path)
    folder = rolls_dir(landing)
    for path in folder.glob(".*.part") if folder.is_dir() and not ingest else []:
        path.unlink()  # a capture's manifest never renamed (an ingest writes its own under the lock)
    return gone


def manifest_notes(manifests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The Debezium notifications the manifests hold, in the manifests' order (pure). Each is applied
    once its manifest exists: the changes Debezium sent before it are in the same manifest or an
    earlier one (up to Kafka's order across partitions, docs/design.md §5.3)."""
    return [{**note, "applied": True} for m in manifests for note in m.get(NOTES_KEY, [])]
