"""The files an ``ingest`` reads, and which of them the log already holds (plain file reads, no Spark).

A file is known by the SHA-256 of its content, not its name: a file ingested twice, under the same name
or another, lands once. What was ingested is recorded in the roll manifests that land it (their
``inputs``), so the record and the events it stands for become visible in the same rename.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import socket
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cdc_backfill.eventlog.writer import remove_unlanded, roll_manifests
from cdc_backfill.files import write_new
from cdc_backfill.lakepath import LakePath, S3Path, lake_path, rmtree
from cdc_backfill.layout import LOG_DIR, STREAM_SUFFIXES, ingested_stream_dir, staging_dir, stream_dir

log = logging.getLogger(__name__)

_CHUNK = 8 << 20


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


def pending(landing: Path, paths: list[Path]) -> tuple[list[InputFile], list[InputFile]]:
    """(files to ingest, files the log already holds); a file given twice counts once."""
    done = ingested(landing)
    todo: list[InputFile] = []
    skipped: list[InputFile] = []
    seen: set[str] = set()
    for path in event_files(paths):
        item = fingerprint(path)
        if item.sha256 in done:
            skipped.append(item)
        elif item.sha256 not in seen:
            todo.append(item)
        seen.add(item.sha256)
    return todo, skipped


@contextmanager
def ingest_lock(landing: LakePath) -> Iterator[None]:
    """One ingest at a time per landing zone; a second one is refused, not queued. Locally a ``flock``
    (gone with its process); on S3, which has no locks, an object made only if absent and removed at
    the end, taken over once older than :data:`S3_LOCK_STALE` seconds (what a killed ingest leaves)."""
    root = lake_path(landing) / LOG_DIR
    if isinstance(root, S3Path):
        with _s3_lock(root / ".ingest.lock", landing):
            yield
        return
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / ".ingest.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"another ingest is running on {landing}: wait for it to finish") from None
        yield
    finally:
        os.close(fd)


S3_LOCK_STALE = 6 * 3600


@contextmanager
def _s3_lock(lock: S3Path, landing: LakePath) -> Iterator[None]:
    mine = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "at": time.time()}).encode()
    if not write_new(lock, mine):
        try:
            age = time.time() - float(json.loads(lock.read_bytes()).get("at", 0))
        except (FileNotFoundError, ValueError):
            age = S3_LOCK_STALE  # gone meanwhile, or unreadable: take it
        if age < S3_LOCK_STALE:
            raise InputError(
                f"another ingest is running on {landing} (its lock {lock} is {age:.0f} s old): wait for it to "
                f"finish; if none is, delete that object"
            )
        log.warning("taking over the lock %s, %.0f s old: the ingest that left it has stopped", lock, age)
        lock.write_bytes(mine)
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)


def remove_unnamed(landing: Path) -> list[Path]:
    """What an ingest that stopped before its manifest left: its staging folder and the log files it had
    named but no manifest lists (their input files were not recorded: they land again)."""
    rmtree(staging_dir(landing))
    gone = remove_unlanded(landing, ingest=True)
    if gone:
        log.warning("removed %d log file(s) of an unfinished ingest: their files land again", len(gone))
    return gone


def move_ingested_stream(landing: Path, known: Iterable[InputFile] = ()) -> list[Path]:
    """The landing's own JSON stream files that the log now holds, moved to ``_ingested/stream/``: the
    reconcile reads each event once, from the log. ``known``: files already hashed in this run (each
    other file is hashed here)."""
    folder = stream_dir(landing)
    if not folder.is_dir():
        return []
    done = ingested(landing)
    hashes = {item.path: item.sha256 for item in known}
    moved = []
    for path in sorted(folder.iterdir()):
        if not (path.is_file() and path.name.endswith(STREAM_SUFFIXES)):
            continue
        sha = hashes.get(path.resolve()) or fingerprint(path).sha256
        if sha in done:
            target = ingested_stream_dir(landing) / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            path.replace(target)
            moved.append(target)
    return moved
