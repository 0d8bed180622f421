"""Events a reconcile read but could not apply, remembered until they can be (plain file reads, no Spark).

A collection can be applied only when something types its rows: a snapshot chunk's metadata or the
capture's ``_schemas`` file (``reconcile.columns``). Events of any other collection (a landing of
Debezium events from another capture, say) are counted per collection with the reason, and the run
exits non-zero: it never reports success over events it dropped on the floor.

``<state>/_unapplied.json`` keeps which stream files were already counted and what they held, so a
later run that reads no new file still names those collections, without parsing the old files again.
Once a collection can be typed it leaves the record: having no state yet, its first run reads every
stream file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_backfill.layout import schema_file, snapshot_dir

UNAPPLIED_FILE = "_unapplied.json"


def no_types_reason(landing: Path, collection: str) -> str:
    return (
        f"nothing gives its column types: no snapshot chunk in {snapshot_dir(landing, collection)}/ "
        f"and no {schema_file(landing, collection)} (this release types a collection only "
        "from this project's snapshot chunks or its PostgreSQL capture)"
    )


@dataclass(frozen=True)
class Unapplied:
    checked: frozenset[str] = frozenset()  # stream files (relative to the stream folder) counted
    events: Mapping[str, int] = field(default_factory=dict)  # collection -> events not applied

    def to_json(self) -> dict[str, Any]:
        return {"checked_files": sorted(self.checked), "events": dict(sorted(self.events.items()))}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Unapplied:
        return cls(
            frozenset(doc.get("checked_files", ())),
            {str(k): int(v) for k, v in doc.get("events", {}).items()},
        )

    def updated(self, files: Iterable[str], counts: Mapping[str, int], typed: Iterable[str]) -> Unapplied:
        """After a run that counted ``files`` and found ``counts``; collections now ``typed`` leave."""
        events = dict(self.events)
        for coll, n in counts.items():
            events[coll] = events.get(coll, 0) + n
        for coll in typed:
            events.pop(coll, None)
        return Unapplied(self.checked | frozenset(files), {c: n for c, n in events.items() if n})


def read_unapplied(state: Path) -> Unapplied:
    path = Path(state) / UNAPPLIED_FILE
    if not path.exists():
        return Unapplied()
    return Unapplied.from_json(json.loads(path.read_text(encoding="utf-8")))


def write_unapplied(state: Path, record: Unapplied) -> None:
    path = Path(state) / UNAPPLIED_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(record.to_json(), indent=2), encoding="utf-8")
    os.replace(tmp, path)


def relative_stream_file(file: str, stream_dir: str) -> str:
    """A parsed row's ``file`` (a path or a ``file:`` URI) relative to the stream folder (pure)."""
    marker = f"/{stream_dir}/"
    at = file.rfind(marker)
    return file[at + len(marker) :] if at >= 0 else file.rsplit("/", 1)[-1]
