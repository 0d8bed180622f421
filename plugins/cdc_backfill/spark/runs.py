"""One incremental reconcile run of one collection (DESIGN.md §6 rule 6), for the job entry point.

``read_*`` are the I/O edge (reading landed files, the previous version and its carry, like
``landing_events``); :func:`reconcile_run` only transforms and counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdc_backfill.layout import stream_dir
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.runs import RunInput, next_meta
from cdc_backfill.spark.landing import parse_landing_files
from cdc_backfill.spark.native import native_landing_events
from cdc_backfill.spark.reconcile import (
    after_position,
    carry,
    newer_than,
    pending_windows,
    reconcile_parts,
    typed_stream,
    windows,
)


def read_new_events(spark: SparkSession, landing: Path, files: Sequence[str]) -> DataFrame:
    """Parsed rows (events and quarantined records) of the given stream files.

    The capture's own lines are parsed in the JVM (``spark.native``); any other line goes through the
    Python parser and gives the same rows it would alone.
    """
    paths = [str(stream_dir(landing) / f) for f in files]
    if not paths:
        return spark.createDataFrame([], "path string, content binary").transform(parse_landing_files)
    return native_landing_events(spark, paths)


def untyped_counts(
    parsed: DataFrame, typed: Sequence[str], scope: Sequence[str] | None
) -> list[tuple[str, str, int]]:
    """(file, collection, events) of row events whose collection nothing types (the signal table and
    ``typed`` left out; only collections in ``scope`` when one is given). Small: files x collections."""
    rows = F.col("quarantine_reason").isNull() & F.col("op").isin("c", "u", "d", "r", "t")
    rows &= ~F.col("collection").isin(list(typed))
    if scope is not None:
        rows &= F.col("collection").isin(list(scope))
    counted = parsed.where(rows).groupBy("file", "collection").count().collect()
    return [(r["file"], r["collection"], r["count"]) for r in counted]


@dataclass(frozen=True)
class RunFrames:
    carry: DataFrame | None
    reads: DataFrame | None
    previous: DataFrame | None


def read_run(spark: SparkSession, run: RunInput, event_schema: Any) -> RunFrames:
    """The previous version, its carry and the READ chunks not judged yet."""
    return RunFrames(
        carry=spark.read.schema(event_schema).parquet(str(run.carry)) if run.carry else None,
        reads=spark.read.parquet(*map(str, run.chunks)) if run.chunks else None,
        previous=spark.read.parquet(str(run.previous)) if run.previous else None,
    )


@dataclass(frozen=True)
class RunResult:
    state: DataFrame
    carry: DataFrame  # for the next run, written beside the state
    info: dict[str, Any]  # the run summary's counts
    meta: dict[str, Any]  # what the new version has consumed (reconcile.runs.RunMeta)
    cached: tuple[DataFrame, ...] = ()  # what the run cached, to release once the version is written

    def release(self) -> None:
        for df in self.cached:
            df.unpersist()


def reconcile_run(
    run: RunInput,
    events: DataFrame,
    frames: RunFrames,
    columns: Sequence[PgColumn],
    key: Sequence[str],
    signal_collection: str,
) -> RunResult:
    """Previous state + new events after its position + carry + READs not judged yet -> the next version.

    ``events``: the new stream files' events. The returned ``state`` is cached; unpersist it once written.
    """
    coll, sig = run.collection, signal_collection
    new = after_position(events, run.meta.position)
    # not cached: ``events`` is stored already, and a second copy of every event costs more than the
    # filter and the small carry it would save
    both = new.unionByName(frames.carry) if frames.carry is not None else new
    reads, previous = frames.reads, frames.previous
    stream = typed_stream(both, coll, columns, key).cache()
    wins = windows(both, sig).cache()
    parts = reconcile_parts(both, reads, coll, columns, key, sig, previous, stream=stream, wins=wins)
    judged = parts.judged.cache() if parts.judged is not None else None  # counted, and used by the state
    closed = parts.windows.where(F.col("_cdc_high").isNotNull()).select("_cdc_chunk_id")
    # by file, not by row: a chunk that read no rows (a range emptied by deletes or a truncate) still
    # closes its window
    closed_ids = {r[0] for r in closed.collect()}
    judged_now = [p.stem for p in run.chunks if p.stem in closed_ids]
    own = (F.col("collection") == coll) & F.col("op").isin("c", "u", "d", "r")
    is_new = newer_than(run.meta.position)
    totals = events.agg(
        F.max(F.when(is_new, F.col("position"))).alias("top"),
        F.count_if(~is_new).alias("late"),
        F.count_if(is_new & own).alias("applied"),
        F.count_if(is_new & own & F.col("after").isNull()).alias("deletes"),
    ).first()
    top = totals["top"]
    meta = next_meta(run, judged_now, [int(p) for p in top] if top is not None else None)
    spark = events.sparkSession
    judged_ids = spark.createDataFrame([(c,) for c in sorted(meta.judged)], "_cdc_chunk_id string")
    pending = pending_windows(parts.windows, coll, judged_ids).cache()
    state = parts.state.cache()
    reads_total = reads.count() if reads is not None else 0
    kept = dropped = 0
    if judged is not None:
        judgement = judged.agg(
            F.count_if(~F.col("_cdc_dropped")).alias("kept"),
            F.count_if(F.col("_cdc_dropped")).alias("dropped"),
        ).first()
        kept, dropped = judgement["kept"], judgement["dropped"]
    info: dict[str, Any] = {
        "rows": state.count(),
        # the stream never sent these rows a value for some column (a key change of a row with an
        # unchanged TOAST value under REPLICA IDENTITY DEFAULT, read before the change): re-snapshot them
        "rows_with_unknown_columns": state.where(F.size("_cdc_unknown") > 0).count(),
        "position": list(meta.position) if meta.position is not None else None,
        "stream_files_read": len(run.new_files),
        "events_applied": totals["applied"],
        "deletes": totals["deletes"],
        "late_events_ignored": totals["late"],  # at or before the previous state's position: in it
        "reads": reads_total,
        "reads_applied": kept,
        "reads_dropped": dropped,
        "reads_waiting": reads_total - kept - dropped,  # their window has not closed in the stream yet
        "windows_pending": pending.count(),
        "keys_removed_since_previous": previous.join(state, list(key), "left_anti").count()
        if previous is not None
        else 0,
    }
    cached = (stream, wins, pending, state) + ((judged,) if judged is not None else ())
    return RunResult(state, carry(both, pending, coll, sig), info, meta.to_json(), cached)  # type: ignore[arg-type]
