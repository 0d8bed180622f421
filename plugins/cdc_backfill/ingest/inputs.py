"""The files an ``ingest`` reads, and which of them the log already holds (plain file reads, no Spark).

A file is known by the SHA-256 of its content, not its name: a file ingested twice, under the same name
or another, lands once. What was ingested is recorded in the roll manifests that land it (their
``inputs``), so the record and the events it stands for become visible in the same rename.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from cdc_backfill.files import write_new
from cdc_backfill.lakepath import LakePath, S3Path, lake_path, rmtree
from cdc_backfill.landing.layout import LOG_DIR, STREAM_SUFFIXES, ingested_stream_dir, staging_dir, stream_dir
from cdc_backfill.landing.manifests import remove_unlanded
from cdc_backfill.landing.stream import InputError, InputFile, event_files, fingerprint, ingested

log = logging.getLogger(__name__)


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
