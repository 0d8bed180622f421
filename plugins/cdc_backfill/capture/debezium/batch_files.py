"""Where ``capture debezium`` lands what the connector emits: JSON lines in the landing zone's stream
folder, one file per batch, each record beside its key and its delivery offset, so that ``ingest`` orders
the events exactly as Debezium delivered them (``events.debezium.delivery_offset``) and types them from
the ``{schema, payload}`` wrapper the connector writes.

A batch's file is whole or absent (temporary name, fsync, rename, fsync of the folder), and it is
written before the engine is told the batch is done. A crash in between makes Debezium deliver that
batch again after the restart: :class:`Deduplicator` recognises the records of the last landed file
(the envelope's processing time aside) and skips them, so nothing lands twice. Offsets continue across
restarts from the last file's name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from cdc_backfill.capture.debezium.settings import local_cache_dir
from cdc_backfill.events.debezium import unwrap
from cdc_backfill.files import write_atomically
from cdc_backfill.lakepath import LakePath, S3Path
from cdc_backfill.landing.layout import (
    DEBEZIUM_BATCH_NAME,
    batch_file_name,
    debezium_dir,
    ingested_stream_dir,
    stream_dir,
)


def _landed_batches(landing: Path) -> Iterator[tuple[int, Path]]:
    """``(last offset, file)`` of every landed batch, whether ``ingest`` has moved it already or not."""
    for folder in (stream_dir(landing), ingested_stream_dir(landing)):
        if folder.is_dir():
            for p in folder.iterdir():
                m = DEBEZIUM_BATCH_NAME.match(p.name)
                if m:
                    yield int(m.group(2)), p


def next_offset(landing: Path) -> int:
    """The delivery offset of the next record: one after the last landed (0 in an empty landing)."""
    last = last_batch(landing)
    return last[0] + 1 if last else 0


def waiting_batches(landing: Path) -> list[Path]:
    """The batch files in ``stream/`` that ``ingest`` has not moved into the log yet."""
    folder = stream_dir(landing)
    return sorted(p for p in folder.iterdir() if DEBEZIUM_BATCH_NAME.match(p.name)) if folder.is_dir() else []


def last_batch(landing: Path) -> tuple[int, Path] | None:
    """The last batch landed, by any run, moved by ``ingest`` or not: (its last delivery offset, its
    file); None in an empty landing. One listing of the landing's two stream folders."""
    return max(_landed_batches(landing), default=None)


def record_identity(key: object, value: object) -> str:
    """What makes a delivered record the same record when Debezium delivers it again (pure): its key
    and value without their schemas and the envelope's processing time (``ts_ms``/``ts_us``/``ts_ns``
    beside ``op``; the source's own times stay)."""
    # without the {schema, payload} wrapper: a record lands with its schema inline or named by id
    key, doc = unwrap(key)[1], unwrap(value)[1]
    if isinstance(doc, dict):
        doc = {k: v for k, v in doc.items() if k not in ("ts_ms", "ts_us", "ts_ns")}
    return json.dumps([key, doc], sort_keys=True, separators=(",", ":"))


class Deduplicator:
    """Skips the records of the last landed file when they arrive again at the start of a run: the
    batch a crash left landed but not committed. Only a contiguous prefix is skipped; the first new
    record ends the check."""

    def __init__(self, seen: set[str]) -> None:
        self._seen = seen

    @classmethod
    def from_file(cls, last: bytes | None) -> Deduplicator:
        """Skipping the records of ``last``, the bytes of the landing's last batch file (None: nothing
        to skip)."""
        seen: set[str] = set()
        for line in (last or b"").splitlines():
            if line.strip() and not line.startswith(NOT_RECORDS):
                doc = json.loads(line)
                seen.add(record_identity(doc.get("key"), doc.get("value")))
        return cls(seen)

    @property
    def checking(self) -> bool:
        """Whether records may still be ones landed before (none new has come yet)."""
        return bool(self._seen)

    def fresh(self, records: list[tuple[str | None, str | None]]) -> list[tuple[str | None, str | None]]:
        if not self._seen:
            return records
        for i, (key, value) in enumerate(records):
            ident = record_identity(json.loads(key) if key else None, json.loads(value) if value else None)
            if ident not in self._seen:
                self._seen = set()
                return records[i:]
        return []


# A batch file's lines that are no record of it: its schema line, and the record before it (follows_line)
NOT_RECORDS = (b'{"schemas":', b'{"follows":')


def follows_line(data: bytes) -> bytes:
    """The line that carries a batch file's last record into the next file, when it may be the delete
    of a key change (pure; empty otherwise). Debezium delivers a key change as a delete then a create;
    a batch can end between them, and ``ingest`` parses each file alone: with the delete before it,
    the next file's first create is paired as in one file (``events.positions.PgStream``). Only what
    the pairing reads is carried: the delete's key, value and offset, without schemas."""
    last = data.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    if b'"op":"d"' not in last or last.startswith(NOT_RECORDS):
        return b""
    doc = json.loads(last)
    record = {k: unwrap(doc.get(k))[1] for k in ("partition", "offset", "key", "value") if k in doc}
    return b'{"follows":' + json.dumps(record, separators=(",", ":")).encode() + b"}\n"


def batch_lines(records: Iterable[tuple[str | None, str | None]], first: int) -> list[str]:
    """``(key JSON, value JSON)`` records as the lines of a batch file (pure): the Kafka-sink layout
    ``{"partition", "offset", "key", "value"}`` that ``ingest`` reads. Tombstones (no value) are kept:
    ingest skips them, and the offsets stay dense.

    The connector's JSON is spliced in as it came, not parsed and written again: it is one line of
    valid JSON already (Jackson, compact), and re-encoding cost more than Debezium's own work."""
    lines = []
    for i, (key, value) in enumerate(records):
        lines.append(
            f'{{"partition":0,"offset":{first + i},"key":{_one_line(key)},"value":{_one_line(value)}}}'
        )
    return lines


def _one_line(doc: str | None) -> str:
    if not doc:
        return "null"
    if "\n" in doc or "\r" in doc:  # pretty-printed by a converter configured so: made compact
        return json.dumps(json.loads(doc), separators=(",", ":"))
    return doc


def land_batch(
    landing: Path, records: list[tuple[str | None, str | None]], first: int, follows: bytes = b""
) -> tuple[Path | None, bytes]:
    """Land one batch durably from delivery offset ``first`` (:func:`next_offset` once, then the
    caller counts), after ``follows`` (:func:`follows_line` of the file before); returns its file (None
    for an empty batch) and its bytes."""
    if not records:
        return None, b""
    data = follows + ("\n".join(batch_lines(records, first)) + "\n").encode()
    return land_lines(landing, data, first, len(records)), data


def land_lines(landing: Path, data: bytes, first: int, count: int) -> Path | None:
    """Land a batch file's bytes (``count`` lines of :func:`batch_lines`, from offset ``first``) durably."""
    if not count:
        return None
    folder = stream_dir(landing)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / batch_file_name(first, first + count - 1)
    write_atomically(path, data)
    return path


DEBEZIUM_FILE_SUFFIXES = (".offsets", ".history")


def pull_debezium_files(landing: LakePath) -> None:
    """A landing on S3: its engine files (offsets, schema history) copied to where the engine reads them
    (``settings.local_copy``), replacing what an earlier run on this machine left there: the
    landing's are the truth, wherever the last run was."""
    folder = debezium_dir(landing)
    if not isinstance(folder, S3Path):
        return
    local = local_cache_dir(folder)
    local.mkdir(parents=True, exist_ok=True)
    for old in local.iterdir():
        if old.suffix in DEBEZIUM_FILE_SUFFIXES:
            old.unlink()
    for obj in folder.iterdir() if folder.is_dir() else ():
        if obj.suffix in DEBEZIUM_FILE_SUFFIXES:
            write_atomically(local / obj.name, obj.read_bytes())


def push_debezium_files(landing: LakePath, pushed: dict[str, bytes]) -> None:
    """A landing on S3: the engine files that changed since ``pushed`` (what was stored, by name)
    stored in the landing, each in one PUT. Called before a batch lands and when the run ends, so the
    stored offsets are at most one batch behind the landed files: a restart elsewhere gets that batch
    again, and :class:`Deduplicator` skips it, as after a crash before the engine's commit."""
    folder = debezium_dir(landing)
    if not isinstance(folder, S3Path):
        return
    local = local_cache_dir(folder)
    for f in sorted(local.iterdir()) if local.is_dir() else ():
        if f.suffix in DEBEZIUM_FILE_SUFFIXES:
            data = f.read_bytes()
            if pushed.get(f.name) != data:
                (folder / f.name).write_bytes(data)
                pushed[f.name] = data
