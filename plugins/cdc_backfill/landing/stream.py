"""The landing's JSON stream files: those waiting in ``<landing>/stream/`` for an ingest (a sink's, a
``capture debezium``'s), those an ingest has read, and how far the PostgreSQL
capture's stream files reach."""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass
from pathlib import Path

from cdc_backfill.lakepath import LakePath
from cdc_backfill.landing.layout import STREAM_SUFFIXES, stream_dir
from cdc_backfill.landing.manifests import landed_log_position, roll_manifests
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE

_CHUNK = 8 << 20  # bytes read at a time for a file's fingerprint


def stream_files(landing: Path) -> list[str]:
    """Every landed JSON stream file, relative to the stream folder, in name order: those an ingest of
    the landing reads (finished files only: writers land ``.part``/hidden files and rename them)."""
    root = stream_dir(landing)
    return [p.relative_to(root).as_posix() for p in ingest_paths(landing, None)]


def unmoved_json_reason(landing: Path, signal_table: str | None = None) -> str | None:
    """Why the landing zone cannot be reconciled yet, if it holds JSON stream files: the reconcile
    reads the typed log only, and ``ingest`` moves them into it (pure but for listing the folder).
    ``signal_table``: the run's, which the printed ``ingest`` names where it is not the default."""
    files = stream_files(landing)
    if not files:
        return None
    return (
        f"{stream_dir(landing)}/ holds {len(files)} JSON stream file(s), which the reconcile does not read: "
        f"move them into the typed log with `{ingest_hint(landing, signal_table)}`, then reconcile again (or reconcile "
        "with --ingest: both in one job)"
    )


def ingest_hint(landing: Path, signal_table: str | None = None) -> str:
    """The command that moves a landing zone's JSON stream files into its log, as the user runs it
    (with the signal table where it is not the default)."""
    named = (
        f" --signal-table {shlex.quote(signal_table)}"
        if signal_table not in (None, DEFAULT_SIGNAL_TABLE)
        else ""
    )
    return f"cdc-backfill ingest --landing {shlex.quote(str(landing))}{named}"


class InputError(ValueError):
    """An input that cannot be read as files of change events: the message says which and why."""


@dataclass(frozen=True)
class InputFile:
    path: Path
    sha256: str
    size: int

    def to_dict(self) -> dict[str, object]:
        return {"file": str(self.path), "sha256": self.sha256, "size": self.size}


def event_files(paths: list[Path]) -> list[Path]:
    """The files given, and under each folder given every file of change events (``.json``, ``.jsonl``,
    ``.ndjson``), in name order; what lies under a hidden or ``_`` name is left out (partial files, the
    log's manifests and schema documents, the quarantine)."""
    out: list[Path] = []
    for given in paths:
        if given.is_file():
            out.append(given)
        elif given.is_dir():
            found = events_under(given)
            if not found:
                raise InputError(
                    f"no files of change events in {given} (looked for *.json, *.jsonl, *.ndjson)"
                )
            out += found
        else:
            raise InputError(f"no such file or folder: {given}")
    return list(dict.fromkeys(p.resolve() for p in out))


def events_under(folder: Path) -> list[Path]:
    """The files of change events under ``folder``, in name order (:func:`event_files`' rule)."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file()
        and p.name.endswith(STREAM_SUFFIXES)
        and not any(part.startswith((".", "_")) for part in p.relative_to(folder).parts)
    )


def ingest_paths(landing: Path, paths: list[Path] | None) -> list[Path]:
    """What an ingest of ``paths`` reads: those given, else (None) the files of change events in the
    landing's own ``stream/``, none when it has none yet (not an error: a capture's file being written
    is there under a hidden name). Given as an empty list: the landing's ``stream/``, which must hold
    some."""
    own = stream_dir(landing)
    if paths is None:
        return events_under(own) if own.is_dir() else []
    return list(paths or [own])


def bytes_to_ingest(landing: Path, paths: list[Path] | None, limit: int | None = None) -> int:
    """The bytes of the files an ingest of ``paths`` reads (:func:`ingest_paths`), files the log already
    holds among them: only their sizes are read. Summing stops once over ``limit``."""
    found = ingest_paths(landing, paths)
    total = 0
    # the landing's own stream (None) is found as its event files already: not asked about again
    for path in found if paths is None else event_files(found):
        total += path.stat().st_size
        if limit is not None and total > limit:
            break
    return total


def fingerprint(path: Path) -> InputFile:
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
            size += len(block)
    return InputFile(path, digest.hexdigest(), size)


def ingested(landing: Path) -> set[str]:
    """The SHA-256 of every file a manifest says was ingested."""
    return {item["sha256"] for manifest in roll_manifests(landing) for item in manifest.get("inputs", [])}


def ingested_names(landing: Path) -> set[str]:
    """The names of the files a manifest says were ingested (``capture debezium``'s batch files among
    them): the stream they hold is in the log."""
    return {
        Path(str(item["file"])).name
        for manifest in roll_manifests(landing)
        for item in manifest.get("inputs", [])
        if isinstance(item, dict) and "file" in item
    }


def landed_position(folder: LakePath) -> tuple[int, int]:
    """The greatest (commit lsn, lsn) the PostgreSQL capture landed (a roll manifest of the typed log);
    (0, 0) for an empty landing zone."""
    logged = landed_log_position(folder)
    return (logged[0], logged[1]) if len(logged) >= 2 else (0, 0)
