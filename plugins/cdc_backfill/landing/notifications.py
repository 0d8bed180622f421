"""Debezium's notifications in a landing: the log ``capture debezium`` keeps, the notification topic's
records a sink landed in ``stream/``, and those ``capture kafka`` recorded in its manifests. They tell
the phantom rule (docs/design.md §6 rule 7) when Debezium's own snapshots ended."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cdc_backfill.lakepath import LakePath, S3Path
from cdc_backfill.landing.layout import DEBEZIUM_BATCH_NAME, debezium_dir, ingested_stream_dir, stream_dir
from cdc_backfill.landing.manifests import manifest_notes, roll_manifests
from cdc_backfill.landing.stream import ingested_names

NOTIFICATION_MARK = b'"Incremental Snapshot"'  # in every such notification: files without it are skipped
_sink_files: dict[tuple[str, int], list[dict]] = {}  # (file, size) -> its notifications: read once


def notifications_file(landing: Path) -> Path:
    return debezium_dir(landing) / "notifications.jsonl"


def snapshot_notification(value: str | None) -> dict | None:
    """An incremental snapshot's notification from Debezium (pure): ``{"id", "type", ...}`` where ``id``
    is the execute-snapshot signal's id and ``type`` STARTED, PAUSED, RESUMED, IN_PROGRESS,
    TABLE_SCAN_COMPLETED, COMPLETED or ABORTED; None for any other notification."""
    if not value:
        return None
    return notification_of(json.loads(value))


def notification_of(doc: object) -> dict | None:
    """:func:`snapshot_notification` of a value already parsed, with or without its schema wrapper."""
    payload = doc.get("payload", doc) if isinstance(doc, dict) and "schema" in doc else doc
    if not isinstance(payload, dict) or payload.get("aggregate_type") != "Incremental Snapshot":
        return None
    return {
        "id": payload.get("id"),
        "type": payload.get("type"),
        "additional_data": payload.get("additional_data") or {},
        "timestamp": payload.get("timestamp"),
    }


def record_notifications(landing: Path, notes: list[dict]) -> None:
    """Append notifications to the landing's notification log, durably (they tell a later run which
    snapshots ended while it was not running)."""
    if not notes:
        return
    path = notifications_file(landing)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(n, separators=(",", ":")) + "\n" for n in notes)
    if isinstance(path, S3Path):  # no appends on S3: the log and the new lines in one PUT
        path.write_bytes((path.read_bytes() if path.is_file() else b"") + lines.encode())
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(lines)
        fh.flush()
        os.fsync(fh.fileno())


def read_notifications(landing: Path) -> list[dict]:
    path = notifications_file(landing)
    notes = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                notes.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a crash
    return notes


def snapshot_outcomes(notes: Iterable[dict]) -> dict[str, str]:
    """Signal id -> COMPLETED or ABORTED, from Debezium's notifications in order (pure).

    Debezium 3.6 reports a stop-snapshot as the snapshot COMPLETED under the signal's id, then ABORTED
    under an id of its own: that ABORTED counts against the snapshot running or just ended, and a
    stopped snapshot stays aborted.
    """
    out: dict[str, str] = {}
    running: str | None = None
    last: str | None = None
    for note in notes:
        sid, kind = str(note.get("id")), note.get("type")
        if kind == "STARTED":
            running = sid
        elif kind == "ABORTED":
            out[sid if sid in out or sid == running else (running or last or sid)] = "ABORTED"
        elif kind == "COMPLETED":
            out[sid] = "ABORTED" if out.get(sid) == "ABORTED" else "COMPLETED"
            last, running = sid, None if running == sid else running
    return out


def ended_snapshots(landing: Path) -> dict[str, str]:
    """Signal id -> COMPLETED or ABORTED, for the snapshots Debezium said have ended: in the notification
    log ``capture debezium`` keeps, or in the stream files a sink landed (:func:`sink_notifications`)."""
    return snapshot_outcomes([*read_notifications(landing), *sink_notifications(landing)])


def sink_notifications(landing: Path) -> list[dict]:
    """Debezium's incremental-snapshot notifications in the landing's stream files (waiting or ingested)
    that a sink wrote, in file-name order: Kafka Connect or Debezium Server landing the notification
    topic (``notification.enabled.channels=sink``) beside the change topics. ``capture debezium``'s own
    batch files never hold them. A local file is read again only when its size changed (a sink
    appending); an object on S3, which never changes, once. Hidden and ``_`` names are left out, as
    ``ingest`` leaves them: a file being written (``.dbz-....jsonl.<id>.part``) is read under its own
    name once whole."""
    files = [p for folder in (stream_dir(landing), ingested_stream_dir(landing)) if folder.is_dir()
             for p in folder.iterdir()
             if not DEBEZIUM_BATCH_NAME.match(p.name) and not p.name.startswith((".", "_"))]  # fmt: skip
    return [note for path in sorted(files, key=lambda p: p.name) for note in _file_notifications(path)]


def _file_notifications(path: LakePath) -> list[dict]:
    if isinstance(path, S3Path):
        key = (str(path), -1)
        if key not in _sink_files:  # a listed prefix is no file: remembered as holding none
            _sink_files[key] = notifications_in(path.read_bytes()) if path.is_file() else []
        return _sink_files[key]
    # a file renamed or moved since the listing is read where it is at the next poll; a folder holds none
    try:
        key = (str(path), path.stat().st_size)
        if key not in _sink_files:
            _sink_files[key] = notifications_in(path.read_bytes())
    except (FileNotFoundError, IsADirectoryError):
        return []
    return _sink_files[key]


def notifications_in(data: bytes) -> list[dict]:
    """The incremental-snapshot notifications among a stream file's JSON lines (pure): values alone, or
    beside their key and offset as a Kafka sink writes them; any other line is not one."""
    if NOTIFICATION_MARK not in data:
        return []
    notes = []
    for line in data.splitlines():
        if NOTIFICATION_MARK not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # not this function's to judge: ingest quarantines it
        value = record.get("value", record) if isinstance(record, dict) and "op" not in record else record
        note = notification_of(value)
        if note is not None:
            notes.append(note)
    return notes


def debezium_notes(landing: Path) -> tuple[dict[str, Any], ...] | None:
    """Debezium's notifications the landing holds, in order, each marked ``applied`` when the stream
    landed before it is in the log; None for a landing no Debezium wrote."""
    notes = None
    if debezium_dir(landing).is_dir():
        found = read_notifications(landing)
        # listed before the run lists its manifests: a file named here is in a manifest the run reads
        names = ingested_names(landing) if found else set()
        notes = tuple({**n, "applied": n.get("landed_in") in names} for n in found)
    # those capture kafka read from a notification topic, in its manifests (an ingest's: the capture's
    # rolls, most of a landing's manifests, are not read)
    read = manifest_notes(roll_manifests(landing, ingest_only=True))
    if read:
        notes = (*(notes or ()), *read)
    return notes
