"""Where ``capture debezium`` lands what the connector emits: JSON lines in the landing zone's stream
folder, one file per batch, each record beside its key and its delivery offset, so that ``ingest`` orders
the events exactly as Debezium delivered them (``events.debezium.delivery_offset``) and types them from
the ``{schema, payload}`` wrapper the connector writes.

A batch's file is whole or absent (temporary name, fsync, rename, fsync of the folder), and it is
written before the engine is told the batch is done: a crash in between makes Debezium deliver the
batch again after the restart, with new offsets, after the copy already landed; replaying a contiguous
run of events again changes no state. Offsets continue across restarts from the last file's name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from cdc_backfill.files import write_atomically
from cdc_backfill.layout import ingested_stream_dir, stream_dir

_NAME_RE = re.compile(r"^dbz-(\d{20})-(\d{20})\.jsonl$")


def batch_file_name(first: int, last: int) -> str:
    """A batch's file: its first and last delivery offsets, zero-padded so names sort in order."""
    return f"dbz-{first:020d}-{last:020d}.jsonl"


def next_offset(landing: Path) -> int:
    """The delivery offset of the next record: one after the last landed, whether ``ingest`` has moved
    its file already or not (0 in an empty landing)."""
    last = -1
    for folder in (stream_dir(landing), ingested_stream_dir(landing)):
        if folder.is_dir():
            for p in folder.iterdir():
                m = _NAME_RE.match(p.name)
                if m:
                    last = max(last, int(m.group(2)))
    return last + 1


def batch_lines(records: Iterable[tuple[str | None, str | None]], first: int) -> list[str]:
    """``(key JSON, value JSON)`` records as the lines of a batch file (pure): the Kafka-sink layout
    ``{"partition", "offset", "key", "value"}`` that ``ingest`` reads. Tombstones (no value) are kept:
    ingest skips them, and the offsets stay dense."""
    lines = []
    for i, (key, value) in enumerate(records):
        doc = {
            "partition": 0,
            "offset": first + i,
            "key": json.loads(key) if key else None,
            "value": json.loads(value) if value else None,
        }
        lines.append(json.dumps(doc, separators=(",", ":")))
    return lines


def land_batch(landing: Path, records: list[tuple[str | None, str | None]], first: int) -> Path | None:
    """Land one batch durably from delivery offset ``first`` (:func:`next_offset` once, then the
    caller counts); returns its file (None for an empty batch)."""
    if not records:
        return None
    folder = stream_dir(landing)
    folder.mkdir(parents=True, exist_ok=True)
    lines = batch_lines(records, first)
    path = folder / batch_file_name(first, first + len(lines) - 1)
    write_atomically(path, ("\n".join(lines) + "\n").encode())
    return path
