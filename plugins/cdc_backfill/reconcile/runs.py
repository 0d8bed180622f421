"""What one reconcile run of a collection starts from: the READ chunks it has not judged yet and what
the previous run left (plain file reads, no Spark; the job does the rest), and whether the landing
zone can be reconciled at all.

Each state version records in its Delta commit what it consumed (:class:`RunMeta`: the READ chunks
judged so far, the stream position the state is complete up to) and where its carry is (the events held
for the next run, see ``cdc_backfill.reconcile.spark.merge.carry``): ``cdc_backfill.state.table``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from cdc_backfill.eventlog.counts import COUNTS, KEYS, LEFT_OUT, ROW_OPS, UNCHANGED, valid_counts
from cdc_backfill.events.positions import position_key
from cdc_backfill.lakepath import lake_path, parquet_metadata
from cdc_backfill.landing.columns import landed_collections
from cdc_backfill.landing.layout import (
    is_ingest_file,
    log_file_span,
    rolls_dir,
    runs_dir,
    snapshot_dir,
)
from cdc_backfill.landing.manifests import SCHEMA_CHANGES
from cdc_backfill.landing.notifications import debezium_notes
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.phantoms import SnapshotTrack
from cdc_backfill.state.table import StateError, StateVersion, current_version


@dataclass(frozen=True)
class RunMeta:
    """What a state version has consumed."""

    judged: frozenset[str] = frozenset()  # READ chunk ids judged: their rows kept or dropped, never again
    position: tuple[int, ...] | None = None  # the state is complete up to here
    # the collection's snapshots, for the phantom rule (reconcile.phantoms)
    snapshots: dict[str, SnapshotTrack] = field(default_factory=dict, compare=True)
    # roll manifests this version read that end after its position (they hold other collections' later
    # events): the next run reads them again, and knows their events at or before the position are in
    # the state already, not late
    manifests: frozenset[str] = frozenset()
    # the latest truncate's position: an event before it, arriving late, is gone with the rows it emptied
    truncated: tuple[int, ...] | None = None
    # the folder of the removals the state remembers (reconcile.spark.removals), written by some version
    removed: str | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "judged_chunks": sorted(self.judged),
            "position": list(self.position) if self.position is not None else None,
        }
        if self.snapshots:
            doc["snapshots"] = {s: t.to_json() for s, t in sorted(self.snapshots.items())}
        if self.manifests:
            doc["read_manifests"] = sorted(self.manifests)
        if self.truncated is not None:
            doc["truncated"] = list(self.truncated)
        if self.removed is not None:
            doc["removed"] = self.removed
        return doc

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> RunMeta:
        pos = doc.get("position")
        return cls(
            frozenset(doc.get("judged_chunks", ())),
            tuple(int(p) for p in pos) if pos is not None else None,
            {s: SnapshotTrack.from_json(s, t) for s, t in doc.get("snapshots", {}).items()},
            frozenset(doc.get("read_manifests", ())),
            tuple(int(p) for p in doc["truncated"]) if doc.get("truncated") is not None else None,
            doc.get("removed"),
        )


@dataclass(frozen=True)
class RunInput:
    """One collection's run: what to read, and what the previous version consumed."""

    collection: str
    previous: StateVersion | None  # the current version, if any
    meta: RunMeta = field(default_factory=RunMeta)
    chunks: tuple[Path, ...] = ()  # READ chunk files not applied yet
    # a landing Debezium's connector writes (``capture debezium``): its snapshot notifications so far;
    # None for any other landing
    debezium: tuple[dict[str, Any], ...] | None = None
    # the landing holds manifests an ingest wrote (files, Kafka topics), whose events arrive in any order:
    # then a late event is merged by its position and removals are remembered (§6 rule 6). A capture's
    # rolls land in position order: an event at or before the state's position is one delivered again
    any_order: bool = False

    @property
    def carry(self) -> Path | None:
        return self.previous.carry if self.previous is not None else None


def read_meta(version: StateVersion | None) -> RunMeta:
    return RunMeta.from_json(version.meta) if version is not None and version.meta else RunMeta()


def plan_run(landing: Path, collection: str, previous: StateVersion | None) -> RunInput:
    meta = read_meta(previous)
    chunk_dir = snapshot_dir(landing, collection)
    chunks = tuple(
        p for p in sorted(chunk_dir.glob("*.parquet")) if p.stem not in meta.judged
    ) if chunk_dir.is_dir() else ()  # fmt: skip
    folder = rolls_dir(landing)
    any_order = folder.is_dir() and any(is_ingest_file(p.name) for p in folder.glob("r*.json"))
    return RunInput(collection, previous, meta, chunks, debezium_notes(landing), any_order)


def next_meta(
    run: RunInput,
    judged_now: Iterable[str],
    position: Iterable[int] | None,
    snapshots: dict[str, SnapshotTrack] | None = None,
    manifests: Iterable[str] = (),
    truncated: Sequence[int] | None = None,
) -> RunMeta:
    """``manifests``: the roll manifests the run read; those ending after the new position are kept.
    ``truncated``: the latest truncate the run read, if any (the earlier one is kept where it is later)."""
    pos = tuple(int(p) for p in position) if position is not None else None
    if run.meta.position is not None and (pos is None or pos < run.meta.position):
        pos = run.meta.position
    tracks = run.meta.snapshots if snapshots is None else snapshots
    floor = position_key(pos).hex() if pos is not None else None
    after = frozenset(m for m in manifests if floor is None or m > floor)
    cut = run.meta.truncated
    if truncated is not None and (cut is None or tuple(truncated) > cut):
        cut = tuple(int(p) for p in truncated)
    return RunMeta(run.meta.judged | frozenset(judged_now), pos, tracks, after, cut, run.meta.removed)


class LandedLog(NamedTuple):
    """The roll manifests after a position: each one's name (its last position's key, in hex), the log
    files it names (relative to the log folder) and its events, of every collection; and each one's
    counts per collection, where it has them (``eventlog.counts``); and the schema changes an ingest
    read (DataWorks' DDL records, with their text), by manifest."""

    manifests: dict[str, tuple[list[str], int]]
    counts: Mapping[str, dict[str, dict[str, int]] | None] = MappingProxyType({})
    changes: Mapping[str, list[dict[str, Any]]] = MappingProxyType({})

    @property
    def files(self) -> list[str]:
        return [f for files, _ in self.manifests.values() for f in files]

    @property
    def events(self) -> int:
        return sum(events for _, events in self.manifests.values())

    def unread(self, meta: RunMeta) -> LandedLog:
        """The manifests a version with ``meta`` has not read."""
        kept = {m: v for m, v in self.manifests.items() if m not in meta.manifests}
        return LandedLog(
            kept, {m: self.counts.get(m) for m in kept}, {m: self.changes.get(m, []) for m in kept}
        )

    def schema_changes(self, collection: str) -> list[dict[str, Any]]:
        """The schema changes of ``collection`` these manifests hold, in their order."""
        return [c for m in sorted(self.changes) for c in self.changes[m] if c.get("collection") == collection]

    def totals(
        self, collection: str, signal_table: str, position: Sequence[int] | None
    ) -> dict[str, Any] | None:
        """The run's totals (those ``reconcile.spark.runs.stream_totals`` counts) from the manifests'
        counts, when each manifest has counts and each log file of ``collection`` and ``signal_table``
        they name begins after ``position`` (so none of its events is late); else None: Spark counts."""
        floor = position_key(tuple(position)) if position is not None else b""
        top: bytes | None = None
        own = dict.fromkeys(KEYS, 0)
        for name, (files, _events) in self.manifests.items():
            counts = self.counts.get(name)
            if counts is None:
                return None
            for f in files:
                if f.split("/", 1)[0] not in (collection, signal_table):
                    continue
                span = log_file_span(f)
                if span is None or span[0] <= floor:
                    return None
                top = span[1] if top is None else max(top, span[1])
            for k, n in counts.get(collection, {}).items():
                own[k] += n
        return {
            "top": top,
            "late": 0,
            "applied": sum(own[op] for op in ROW_OPS),
            "deletes": own["d"],
            "truncates": own["t"],
            "stream_reads": own["r"],
            "left_out": own[LEFT_OUT],
            "unchanged": own[UNCHANGED],
        }


def landed_log_files(landing: Path, after: Sequence[int] | None = None) -> LandedLog:
    """The roll manifests whose last position is after ``after``: a manifest's name is its last
    position's key, in hex."""
    folder = rolls_dir(landing)
    if not folder.is_dir():
        return LandedLog({})
    floor = position_key(tuple(after)).hex() if after is not None else None
    out: dict[str, tuple[list[str], int]] = {}
    counts: dict[str, dict[str, dict[str, int]] | None] = {}
    changes: dict[str, list[dict[str, Any]]] = {}
    for manifest in sorted(folder.glob("r*.json")):
        if floor is not None and manifest.stem[1:] <= floor:
            continue
        doc = json.loads(manifest.read_text())
        out[manifest.stem[1:]] = (list(doc["files"]), int(doc.get("events", 0)))
        counts[manifest.stem[1:]] = valid_counts(doc.get(COUNTS))
        changes[manifest.stem[1:]] = list(doc.get(SCHEMA_CHANGES, []))
    return LandedLog(out, counts, changes)


def last_run(state: Path) -> tuple[str, dict[str, Any]] | None:
    """The newest run record of the state (``_runs/``): its name and its summary; None before any."""
    folder = runs_dir(state)
    for path in sorted(folder.glob("*.json"), reverse=True) if folder.is_dir() else ():
        try:
            return path.name, json.loads(path.read_text())
        except (OSError, ValueError):
            continue
    return None


def last_landing(state: Path) -> Path | None:
    """The landing zone the state's last reconcile read, if it still exists (``_runs/``)."""
    folder = runs_dir(state)
    for path in sorted(folder.glob("*.json"), reverse=True) if folder.is_dir() else ():
        try:
            landing = json.loads(path.read_text()).get("landing")
        except (OSError, ValueError):
            continue
        if landing:
            return lake_path(landing) if lake_path(landing).is_dir() else None
    return None


def nothing_new(landing: Path, state: Path, collections: Iterable[str], signal_table: str) -> bool:
    """Whether a reconcile of ``collections`` (none: every one landed) would change nothing (file reads
    only, no Spark): every one has a state, no READ chunk it has not judged, and no roll manifest it has
    not read ends after its position. Windows and phantom decisions move only with new events or chunks,
    so such a run writes the same rows again."""
    names = list(collections) or landed_collections(landing, signal_table)
    for coll in names:
        try:
            previous = current_version(state, coll)
        except StateError:  # a state this release does not read: the reconcile says so
            return False
        if previous is None:
            return False
        run = plan_run(landing, coll, previous)
        if run.chunks or run.meta.position is None:
            return False
        # manifests read by the previous run hold events of other collections only after its position
        if landed_log_files(landing, run.meta.position).unread(run.meta).events:
            return False
    return bool(names)


class ChunkFooters(NamedTuple):
    """What a run's chunk files' footers tell: the READ rows of each chunk (by its id, the file's name),
    and each file's least and greatest value of the key's first column (None where a file has no such
    statistics; files without rows left out), by chunk id in ``spans``."""

    rows: dict[str, int]
    spans: dict[str, tuple[Any, Any] | None]

    @property
    def key_ranges(self) -> list[tuple[Any, Any] | None]:
        return list(self.spans.values())


def chunk_footers(chunks: Sequence[Any], first_key: str | None = None) -> ChunkFooters:
    """:class:`ChunkFooters` of the chunk files: no Spark job; a landing on S3 reads them a few at a
    time."""
    if not chunks:
        return ChunkFooters({}, {})
    with ThreadPoolExecutor(max_workers=min(16, len(chunks))) as pool:
        footers = list(pool.map(parquet_metadata, chunks))
    rows = {p.stem: m.num_rows for p, m in zip(chunks, footers, strict=True)}
    # a chunk that read no rows reads no key
    spans = {p.stem: key_range(m, first_key) for p, m in zip(chunks, footers, strict=True) if m.num_rows}
    return ChunkFooters(rows, spans)


def key_range(footer: Any, column: str | None) -> tuple[Any, Any] | None:
    """The least and greatest value of ``column`` in a Parquet footer's statistics; None where a row
    group has none, or may hold a NULL there (which the range does not cover), or the file has no rows."""
    if column is None or footer.num_rows == 0:
        return None
    names = [footer.schema.column(i).path for i in range(footer.num_columns)]
    if column not in names:
        return None
    at, least, greatest = names.index(column), None, None
    for g in range(footer.num_row_groups):
        stats = footer.row_group(g).column(at).statistics
        if stats is None or not stats.has_min_max or not stats.has_null_count or stats.null_count:
            return None
        least = stats.min if least is None else min(least, stats.min)
        greatest = stats.max if greatest is None else max(greatest, stats.max)
    return least, greatest


class ReadSpan(NamedTuple):
    """A closed chunk's keys (the least and greatest, from its file's footer) and its window."""

    chunk: str
    least: Any
    greatest: Any
    low: bytes
    high: bytes


def read_spans(spans: Mapping[str, tuple[Any, Any] | None], windows: Sequence[Any]) -> list[ReadSpan] | None:
    """The chunks whose window has closed, by their least key, where the chunk files' key ranges are
    apart (:func:`reads_once`): then a key's READ row is in the one chunk whose range holds the key, and
    a stream event of that key is inside the READ row's window exactly when it is inside that chunk's.
    None where the ranges do not tell it (a file without statistics, ranges that meet)."""
    if not reads_once(list(spans.values())):
        return None
    closed = {w.chunk_id: w for w in windows if w.high is not None}
    found = [
        ReadSpan(chunk, span[0], span[1], closed[chunk].low, closed[chunk].high)
        for chunk, span in spans.items()
        if span is not None and chunk in closed
    ]
    return sorted(found, key=lambda s: s.least)


# chunks whose spans mark the stream by a search (``reconcile.spark.spans``); more are joined. Measured
# faster than the join up to 100 (docs/benchmarks.md, "Measured choices"); the SQL text of each step
# names every chunk's least key, so it is not made for any number
SPANS_AT_MOST = 1024


def stream_spans(
    spans: Mapping[str, Any], window_rows: Sequence[Any], columns: Sequence[PgColumn], key: Sequence[str]
) -> list[ReadSpan] | None:
    """The closed chunks' key ranges and windows (``reconcile.runs.read_spans``) that mark the stream in
    the merge's pass without a join: for a key of one integer or text column (whose footer statistics
    compare as Spark compares the column), and not too many chunks for one expression."""
    kinds = {c.name: c.kind for c in columns}
    if len(key) != 1 or kinds.get(key[0]) not in ("int", "text"):
        return None
    found = read_spans(spans, window_rows)
    return found if found is not None and len(found) <= SPANS_AT_MOST else None


def reads_once(ranges: Sequence[tuple[Any, Any] | None]) -> bool:
    """True when no key has two READ rows in the run: each chunk reads a key at most once (one query of
    a key range, or Debezium's chunk), and the chunk files' key ranges (the key's first column, from
    their footers) are apart. Then the merge judges each key's READ row in its own pass
    (``reconcile.spark.winners.merged_judging_reads``)."""
    if any(r is None for r in ranges):
        return False
    try:
        spans = sorted(ranges)  # type: ignore[type-var]
        return all(a[1] < b[0] for a, b in pairwise(spans))
    except TypeError:  # values that do not compare (a NaN does, but never as less: the ranges then meet)
        return False
