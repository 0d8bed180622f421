"""What one reconcile run of a collection starts from: the stream files and READ chunks it has not
read yet, and what the previous run left (plain file reads, no Spark; the job does the rest).

Each state version keeps, beside its rows, ``_cdc_meta.json`` (the stream files read so far, the READ
chunks judged so far, the stream position the state is complete up to) and ``_cdc_carry/`` (see
``cdc_backfill.spark.reconcile.carry``). Both names start with ``_``, so Spark, DuckDB and pandas
reading the version's folder leave them out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_backfill.layout import CARRY_DIR, META_FILE, STREAM_SUFFIXES, snapshot_dir, stream_dir


@dataclass(frozen=True)
class RunMeta:
    """What a state version has consumed."""

    files: frozenset[str] = frozenset()  # stream files, relative to the stream folder
    judged: frozenset[str] = frozenset()  # READ chunk ids judged: their rows kept or dropped, never again
    position: tuple[int, ...] | None = None  # the state is complete up to here

    def to_json(self) -> dict[str, Any]:
        return {
            "files": sorted(self.files),
            "judged_chunks": sorted(self.judged),
            "position": list(self.position) if self.position is not None else None,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RunMeta:
        pos = doc.get("position")
        return cls(
            frozenset(doc.get("files", ())),
            frozenset(doc.get("judged_chunks", doc.get("applied_chunks", ()))),  # the earlier name
            tuple(int(p) for p in pos) if pos is not None else None,
        )


@dataclass(frozen=True)
class RunInput:
    """One collection's run: what to read, and what the previous version consumed."""

    collection: str
    previous: Path | None  # the current version's folder, if any
    meta: RunMeta = field(default_factory=RunMeta)
    new_files: tuple[str, ...] = ()
    chunks: tuple[Path, ...] = ()  # READ chunk files not applied yet

    @property
    def carry(self) -> Path | None:
        if self.previous is None:
            return None
        path = self.previous / CARRY_DIR
        return path if path.is_dir() else None


def stream_files(landing: Path) -> list[str]:
    """Every landed stream file, relative to the stream folder, in name order (finished files only:
    writers land ``.part``/hidden files and rename them)."""
    root = stream_dir(landing)
    if not root.is_dir():
        return []
    return sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and p.name.endswith(STREAM_SUFFIXES) and not p.name.startswith((".", "_"))
    )


def read_meta(version: Path | None) -> RunMeta:
    if version is None or not (version / META_FILE).exists():
        return RunMeta()
    return RunMeta.from_json(json.loads((version / META_FILE).read_text()))


def plan_run(landing: Path, collection: str, previous: Path | None, files: Iterable[str]) -> RunInput:
    meta = read_meta(previous)
    new_files = tuple(f for f in files if f not in meta.files)
    chunk_dir = snapshot_dir(landing, collection)
    chunks = tuple(
        p for p in sorted(chunk_dir.glob("*.parquet")) if p.stem not in meta.judged
    ) if chunk_dir.is_dir() else ()  # fmt: skip
    return RunInput(collection, previous, meta, new_files, chunks)


def next_meta(run: RunInput, judged_now: Iterable[str], position: Iterable[int] | None) -> RunMeta:
    pos = tuple(int(p) for p in position) if position is not None else None
    if run.meta.position is not None and (pos is None or pos < run.meta.position):
        pos = run.meta.position
    return RunMeta(run.meta.files | frozenset(run.new_files), run.meta.judged | frozenset(judged_now), pos)
