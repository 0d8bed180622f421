"""One incremental reconcile run of one collection (docs/design.md §6 rule 6), for the job entry point.

``read_run`` is the I/O edge (the previous version, its carry and the READ chunks);
:func:`reconcile_run` only transforms and counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_backfill.eventlog.schema import OP, UNCHANGED
from cdc_backfill.lakepath import same_file
from cdc_backfill.landing.layout import CARRY_ROWS, CARRY_SIGNALS
from cdc_backfill.landing.spark.rows import log_schema, signal_schema
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.debezium_snapshots import notification_marks
from cdc_backfill.reconcile.phantoms import advance, decide, report
from cdc_backfill.reconcile.runs import RunInput, RunMeta, chunk_footers, next_meta, reads_once, stream_spans
from cdc_backfill.reconcile.signal_files import carried_signal_files
from cdc_backfill.reconcile.spark.merge import (
    carry,
    reconcile_parts,
    signal_rows,
    truncates,
    typed_stream,
    window_frame,
)
from cdc_backfill.reconcile.spark.new_rows import after_state, late_count, stream_totals, unseen
from cdc_backfill.reconcile.spark.phantoms import PHANTOM, phantom
from cdc_backfill.reconcile.spark.removals import (
    after_truncate,
    latest_truncate,
    next_removals,
    phantom_removals,
    removal_rows,
    removals_schema,
)
from cdc_backfill.reconcile.spark.winners import HAD_PREVIOUS, KEPT, READS_APPLIED, kept_keys
from cdc_backfill.reconcile.windows import SignalRow, Window, closed_chunks, find_windows, run_marks
from cdc_backfill.signals.marks import Mark
from cdc_backfill.spark.driver_frames import parquet_files
from cdc_backfill.spark.positions import position_of
from cdc_backfill.state.spark.frames import read_version, version_schema
from cdc_backfill.state.table import UNKNOWN, StateVersion


@dataclass(frozen=True)
class RunFrames:
    carry_rows: DataFrame | None
    carry_signals: DataFrame | None
    reads: DataFrame | None
    previous: DataFrame | None
    carried_signals: list[Any]  # the carry's signal files ([]: none)
    removed: DataFrame | None = None  # the removals the previous version remembers (``removals``)


def read_run(
    spark: SparkSession,
    run: RunInput,
    columns: Sequence[PgColumn],
    key: Sequence[str],
) -> RunFrames:
    """The previous version, its carry, the removals it remembers and the READ chunks not judged yet."""
    carry_rows = carry_signals = previous = None
    carried = carried_signal_files(run.carry)
    if run.carry:
        carry_rows = spark.read.schema(log_schema(columns)).parquet(str(run.carry / CARRY_ROWS))
        carry_signals = spark.read.schema(signal_schema()).parquet(str(run.carry / CARRY_SIGNALS))
    if run.previous is not None:
        previous = read_version(spark, run.previous)
    reads = parquet_files(spark, [str(p) for p in run.chunks]) if run.chunks else None
    removed = None
    if run.previous is not None and run.previous.removed is not None and key:
        removed = spark.read.schema(removals_schema(columns, key)).parquet(str(run.previous.removed))
    return RunFrames(carry_rows, carry_signals, reads, previous, carried, removed)


@dataclass(frozen=True)
class RunResult:
    state: DataFrame  # observed: some of its counts are known only once it is written
    carry: tuple[DataFrame, DataFrame] | None  # for the next run (log rows, signal rows), beside the state
    counts: dict[str, Any]  # the run summary's counts known before the write
    # the state's rows, its incomplete rows, the keys it lost and the READs applied, counted by the write
    counted: Observation
    meta: dict[str, Any]  # what the new version has consumed (reconcile.runs.RunMeta)
    # the previous version's files ``state`` replaces (None: all of them); the others are kept as they are
    replaced: tuple[str, ...] | None = None
    kept_rows: int = 0  # the rows of the files kept
    removed: DataFrame | None = None  # the removals the new version remembers, where they changed

    def info(self) -> dict[str, Any]:
        """The run summary's counts; blocks until the state has been written."""
        counted = self.counted.get
        counts = dict(self.counts)
        judged = counts.pop("reads_judged")
        return {
            "rows": counted["rows"] + self.kept_rows,
            # the stream never sent these rows a value for some column (a key change of a row with an
            # unchanged TOAST value under REPLICA IDENTITY DEFAULT, read before the change): re-snapshot them
            "rows_with_unknown_columns": counted["unknown"],
            **counts,
            "reads_applied": counted["reads_applied"],
            "reads_dropped": judged - counted["reads_applied"],
            # rows a finished snapshot did not read and no event touched after it started (§6 rule 7)
            "phantoms_removed": counted["phantoms"],
            "keys_removed_since_previous": counted["removed"],
        }


def reconcile_run(
    run: RunInput,
    rows: DataFrame,
    signals: DataFrame | Callable[[], DataFrame],
    frames: RunFrames,
    columns: Sequence[PgColumn],
    key: Sequence[str],
    *,
    fresh: tuple[DataFrame, DataFrame] | None = None,
    manifests: Iterable[str] = (),
    by_file: bool = False,
    totals: Mapping[str, Any] | None = None,
    read_signals: Callable[[], list[SignalRow]] | None = None,
) -> RunResult:
    """Previous state + new log rows after its position + carry + READs not judged yet -> the next
    version. ``rows``/``signals``: the collection's and the signal collection's log rows of the roll
    ``manifests`` ending after the state's position. ``fresh``: those of the manifests among them the
    previous version did not read, where it read some (their rows at or before the position are in the
    state; only the others' are late). None: it read none of them. A late event competes with the state
    by its position, as any other (§6 rule 6).

    A small run's time is mostly Spark jobs, each planned and scheduled by the driver: this issues one
    over the new log rows where the roll manifests do not count the run's events (``totals``), and one
    that collects the signal rows the windows come from where the caller did not read them (with
    ``read_signals``), side by side; then the state's write, which counts the state (and the READs
    applied) as it goes. The READ rows per chunk come from the chunk files' footers.

    ``by_file``: where only the keys the stream names change, the result holds only the rows of the
    previous version's files that hold one of those keys (and the new keys): the writer replaces those
    files and keeps the others. Else, and always without it, the result is the whole next version.

    ``totals``: what :func:`stream_totals` would count, when the caller knows it from the roll
    manifests (``reconcile.runs.LandedLog.totals``); then that job is not run.

    ``signals``: or a function that returns them, called only where they are read (no ``read_signals``,
    no ``totals``, windows to carry): a frame costs the driver its files' listing (25-30 ms at 1M events)."""
    spark = rows.sparkSession
    signals_frame = cache((lambda: signals) if isinstance(signals, DataFrame) else signals)
    new_rows = after_truncate(run, unseen(run, rows, frames.carry_rows, fresh))
    new_signals = cache(lambda: after_state(run, signals_frame(), frames.carry_signals))
    if read_signals is None or totals is None:
        signals_frame()  # read below, maybe by both calls at once: built once, before them
    # what the plan below needs, side by side (a Spark job is mostly the driver's scheduling)
    given = totals
    collected, footers, totals = at_once(
        read_signals or (lambda: signal_rows(new_signals())), lambda: chunk_footers(run.chunks, key[0] if key else None),
        lambda: given if given is not None else stream_totals(rows, signals_frame(), run.meta.position),
    )  # fmt: skip
    late_n = late_count(totals, fresh, run.meta.position)
    # the latest truncate among the new rows (those the state has not seen: the new, the late, the carry's)
    cut = latest_truncate(new_rows if totals["truncates"] or late_n else frames.carry_rows)
    no_truncate = cut is None
    # no READ rows and no truncate (the usual small run): only the keys the stream names are merged again
    touched_only = frames.reads is None and frames.previous is not None and no_truncate
    window_rows = find_windows(collected)
    marks = run_marks(collected, run.collection, executes=run.debezium is not None)
    stream = typed_stream(new_rows, columns, key)
    top = position_of(totals["top"])
    snapshots = judge_snapshots(run, window_rows, marks, columns, key, top, manifests, cut)
    previous, replaced, kept_rows = frames.previous, None, 0
    # phantom removal reads every row: a run that removes phantoms rewrites the whole version
    partial = touched_only and not snapshots.removals and run.previous is not None
    if by_file and partial and None not in run.previous.file_rows:  # type: ignore[union-attr]
        previous, replaced, kept_rows = touched_part(run.previous, stream, key)
    # READ rows per chunk: how many the judgement takes, and how many wait
    reads_total = sum(footers.rows.values())
    closed = closed_chunks(window_rows)
    reads_judged = sum(n for c, n in footers.rows.items() if c in closed)
    spans = stream_spans(footers.spans, window_rows, columns, key)
    parts = reconcile_parts(
        stream, None if no_truncate else truncates(new_rows), frames.reads, window_rows, columns, key,
        previous=previous, touched_only=touched_only, key_changes=totals["left_out"] > 0,
        left_out=left_out_rows(totals, frames.carry_rows, previous),
        # the fast path marks the stream by the chunks' spans, else by a broadcast of the READ rows' keys
        reads_once=reads_once(footers.key_ranges) and (spans is not None or reads_total <= FEW_READS), spans=spans,
        removed=removal_rows(frames.removed, stream, columns, key) if frames.removed is not None else None,
    )  # fmt: skip
    state, counted = state_of(parts.keys, snapshots.removals)
    if replaced is not None and not same_columns(state.schema, version_schema(run.previous)):  # type: ignore[arg-type]
        # the columns changed (a column added at the source): the kept files cannot stay as they are
        return reconcile_run(
            run, rows, signals, frames, columns, key, fresh=fresh, manifests=manifests, totals=totals
        )
    counts = run_counts(totals, snapshots, reads_total, reads_judged, late_n)
    # nothing pending, nothing to carry: the next run then reads no carry at all
    pending = snapshots.pending
    carried = carry(new_rows, new_signals(), window_frame(spark, pending)) if pending else None
    # the key beside what was consumed: readers of the version (the re-read of incomplete rows) need it
    meta = {**snapshots.meta.to_json(), "key": list(key)}
    removed = None
    changed = totals["deletes"] or late_n or cut is not None or snapshots.removals
    if key and changed and (run.any_order or frames.removed is not None):
        phantoms = phantom_removals(previous, snapshots.removals, key)
        removed = next_removals(frames.removed, new_rows, key, snapshots.meta.truncated, phantoms)
    return RunResult(state, carried, counts, counted, meta, replaced, kept_rows, removed)


def at_once(*calls: Callable[[], Any]) -> list[Any]:
    """Each call's result, the calls side by side (their Spark jobs at once); the first error, all ended."""
    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(c) for c in calls]
    return [f.result() for f in futures]


def same_columns(a: T.StructType, b: T.StructType) -> bool:
    """The same column names and types, in order (whether Spark deems a column nullable aside)."""
    return [(f.name, f.dataType) for f in a.fields] == [(f.name, f.dataType) for f in b.fields]


def touched_part(
    version: StateVersion, stream: DataFrame, key: Sequence[str]
) -> tuple[DataFrame | None, tuple[str, ...] | None, int]:
    """The rows of the files of ``version`` that hold a key ``stream`` names, those files, and the rows of
    the others (from their statistics). One Spark job, over the key columns only. All files touched:
    (the whole version, None, 0), a plain rewrite."""
    spark = stream.sparkSession
    touched = set(touched_files(version, stream, key))
    if len(touched) == len(version.files):
        return read_version(spark, version), None, 0
    kept = sum(n or 0 for f, n in zip(version.files, version.file_rows, strict=True) if f not in touched)
    part = replace(version, files=tuple(f for f in version.files if f in touched))
    rows = read_version(spark, part) if part.files else None
    return rows, part.files, kept


def touched_files(version: StateVersion, stream: DataFrame, key: Sequence[str]) -> list[str]:
    """The files of ``version`` that hold a key ``stream`` names (a NULL key part matches a NULL, as the
    merge groups them)."""
    spark = stream.sparkSession
    named = F.broadcast(stream.select(*[F.col(k).alias(f"_cdc_k{i}") for i, k in enumerate(key)]).distinct())
    rows = read_version(spark, version).select(*key, F.col("_metadata.file_path").alias("_cdc_file"))
    same = [rows[k].eqNullSafe(named[f"_cdc_k{i}"]) for i, k in enumerate(key)]
    found = rows.join(named, same, "left_semi").select("_cdc_file").distinct().collect()
    by_path = {same_file(f): f for f in version.files}
    return sorted(by_path[same_file(r[0])] for r in found)


FEW_READS = 1_000_000  # READ rows whose keys and windows the judgement broadcasts (about 100 MB at most)


def left_out_rows(totals: Mapping[str, Any], carry_rows: DataFrame | None, previous: DataFrame | None) -> int:
    """How many of the merge's rows may leave a value column out (``merge.merged_keys``): the log rows
    and carried rows with unchanged columns, and the previous state's rows with unknown ones. The
    carry's and the previous state's are counted by a job each, over one column."""
    n = totals["unchanged"]
    if carry_rows is not None:
        n += carry_rows.where(F.col(OP).isin("c", "u", "r") & (F.size(UNCHANGED) > 0)).count()
    if previous is not None:
        n += previous.where(F.size(UNKNOWN) > 0).count()
    return n


@dataclass(frozen=True)
class Snapshots:
    """What the run's windows say of the snapshots (§6 rule 7): the new version's meta, each snapshot's
    track, the removals decided now, and the windows still waiting for their chunk."""

    meta: RunMeta
    tracks: dict[str, Any]
    before: dict[str, Any]
    removals: list[Any]
    pending: list[Window]


def judge_snapshots(
    run: RunInput,
    window_rows: Sequence[Window],
    marks: list[Mark],
    columns: Sequence[PgColumn],
    key: Sequence[str],
    top: tuple[int, ...] | None,
    manifests: Iterable[str],
    truncated: tuple[int, ...] | None = None,
) -> Snapshots:
    """The chunks judged now (by file, not by row: a chunk that read no rows, a range emptied by
    deletes or a truncate, still closes its window), each snapshot's track advanced, and which finished
    snapshots remove phantoms."""
    closed_ids = closed_chunks(window_rows)
    judged_now = [p.stem for p in run.chunks if p.stem in closed_ids]
    snapshot_of = {w.chunk_id: w.snapshot for w in window_rows}
    judged_by_snapshot = Counter(snapshot_of[c] for c in judged_now if snapshot_of.get(c))
    if run.debezium is not None:  # Debezium's snapshots: finished or stopped, as its notifications say
        reached = max((p for p in (top, run.meta.position) if p is not None), default=None)
        marks = [*marks, *notification_marks(list(run.debezium), run.collection, reached)]
    tracks = advance(run.meta.snapshots, marks, judged_by_snapshot)
    tracks, removals = decide(tracks, [c for c in columns if c.name in key])
    meta = next_meta(run, judged_now, top, tracks, manifests, truncated)
    decided = {s for s, t in tracks.items() if t.decided is not None}
    # a window of a decided snapshot without a chunk file never gets one (an engine crash between its
    # close and the landing): it is not carried any further
    pending = [
        w for w in window_rows
        if w.collection == run.collection and w.chunk_id not in meta.judged and w.snapshot not in decided
    ]  # fmt: skip
    return Snapshots(meta, tracks, run.meta.snapshots, removals, pending)


def state_of(keys: DataFrame, removals: list[Any]) -> tuple[DataFrame, Observation]:
    """The kept keys as the new state, phantoms removed, observed so that its write counts its rows."""
    gone = phantom(removals)
    if gone is not None:
        keys = keys.withColumn(PHANTOM, F.col(KEPT) & gone).withColumn(KEPT, F.col(KEPT) & ~F.col(PHANTOM))
    counted = Observation()
    state = kept_keys(
        keys.observe(
            counted,
            F.count_if(F.col(KEPT)).alias("rows"),
            F.count_if(F.col(KEPT) & (F.size(UNKNOWN) > 0)).alias("unknown"),
            F.count_if(F.col(HAD_PREVIOUS) & ~F.col(KEPT)).alias("removed"),
            F.coalesce(F.sum(READS_APPLIED), F.lit(0)).alias("reads_applied"),
            F.count_if(F.col(PHANTOM) if gone is not None else F.lit(False)).alias("phantoms"),
        )
    ).drop(PHANTOM)
    return state, counted


def run_counts(
    totals: Mapping[str, Any],
    snapshots: Snapshots,
    reads_total: int,
    reads_judged: int,
    late: int,
) -> dict[str, Any]:
    """The run summary's counts known before the state is written."""
    meta = snapshots.meta
    counts: dict[str, Any] = {
        "position": list(meta.position) if meta.position is not None else None,
        "events_applied": totals["applied"],
        "deletes": totals["deletes"],
        # landed after the previous run, at or before its position: out of order (merged by position,
        # where the landing's events arrive in any order) or delivered again (a capture's landing)
        "late_events": late,
        "reads": reads_total,
        "reads_judged": reads_judged,  # applied or dropped: counted as the state is written (RunResult.info)
        "reads_waiting": reads_total - reads_judged,  # their window has not closed in the stream yet
        "windows_pending": len(snapshots.pending),
    }
    before = snapshots.before
    said = report({s: t for s, t in snapshots.tracks.items() if s not in before or before[s].decided is None})
    if totals["stream_reads"] and not snapshots.tracks:
        said["debezium"] = (
            "no removal: the landing does not tell when the snapshot that sent READ events in the stream "
            "completed"
        )
    if said:
        counts["snapshots"] = said
    return counts
