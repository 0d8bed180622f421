"""One incremental reconcile run of one collection (DESIGN.md §6 rule 6), for the job entry point.

``read_run`` is the I/O edge (the previous version, its carry and the READ chunks);
:func:`reconcile_run` only transforms and counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_backfill.eventlog.schema import OP, POSITION
from cdc_backfill.layout import CARRY_ROWS, CARRY_SIGNALS
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.runs import RunInput, next_meta
from cdc_backfill.spark.logrows import as_log_rows, as_signal_rows, log_schema, signal_schema
from cdc_backfill.spark.positions import key_of_decimal_array, position_of
from cdc_backfill.spark.reconcile import (
    HAD_PREVIOUS,
    KEPT,
    ROW_OPS,
    after_position,
    carry,
    kept_keys,
    newer_than,
    pending_windows,
    reconcile_parts,
    truncates,
    typed_stream,
    windows,
)
from cdc_backfill.spark.state import spark_schema_of


@dataclass(frozen=True)
class RunFrames:
    carry_rows: DataFrame | None
    carry_signals: DataFrame | None
    reads: DataFrame | None
    previous: DataFrame | None


def read_run(
    spark: SparkSession,
    run: RunInput,
    columns: Sequence[PgColumn],
    key: Sequence[str],
    signal_collection: str,
) -> RunFrames:
    """The previous version, its carry and the READ chunks not judged yet. A version written before
    positions were keys (``array<decimal(38,0)>``) and carries were log rows is read converted."""
    carry_rows = carry_signals = previous = None
    if run.carry:
        rows_dir, signals_dir = run.carry / CARRY_ROWS, run.carry / CARRY_SIGNALS
        if rows_dir.is_dir():
            carry_rows = spark.read.schema(log_schema(columns)).parquet(str(rows_dir))
            carry_signals = spark.read.schema(signal_schema()).parquet(str(signals_dir))
        else:  # canonical events
            old = with_position_keys(spark.read.parquet(str(run.carry)), "position")
            carry_rows = as_log_rows(old, run.collection, columns, key)
            carry_signals = as_signal_rows(old, signal_collection)
    if run.previous:
        schema = spark_schema_of(run.previous)
        reader = spark.read.schema(schema) if schema is not None else spark.read
        previous = with_position_keys(reader.parquet(str(run.previous)), "_cdc_position")
    reads = spark.read.parquet(*map(str, run.chunks)) if run.chunks else None
    return RunFrames(carry_rows, carry_signals, reads, previous)


def with_position_keys(df: DataFrame, column: str) -> DataFrame:
    if isinstance(df.schema[column].dataType, T.ArrayType):
        return df.withColumn(column, key_of_decimal_array(F.col(column)))
    return df


@dataclass(frozen=True)
class RunResult:
    state: DataFrame
    carry: tuple[DataFrame, DataFrame] | None  # for the next run (log rows, signal rows), beside the state
    info: dict[str, Any]  # the run summary's counts
    meta: dict[str, Any]  # what the new version has consumed (reconcile.runs.RunMeta)
    cached: tuple[DataFrame, ...] = ()  # what the run cached, to release once the version is written

    def release(self) -> None:
        for df in self.cached:
            df.unpersist()


def reconcile_run(
    run: RunInput,
    rows: DataFrame,
    signals: DataFrame,
    frames: RunFrames,
    columns: Sequence[PgColumn],
    key: Sequence[str],
) -> RunResult:
    """Previous state + new log rows after its position + carry + READs not judged yet -> the next
    version. ``rows``/``signals``: the collection's and the signal collection's new log rows.

    The returned ``state`` is cached; release the result once written.
    """
    coll = run.collection
    new_rows = after_position(rows, run.meta.position)
    new_signals = after_position(signals, run.meta.position)
    if frames.carry_rows is not None and frames.carry_signals is not None:
        new_rows = new_rows.unionByName(frames.carry_rows)
        new_signals = new_signals.unionByName(frames.carry_signals)
    reads, previous = frames.reads, frames.previous
    stream = typed_stream(new_rows, columns, key).cache()
    wins = windows(new_signals).cache()
    # no READ rows and no truncate (the usual small run): only the keys the stream names are merged again
    touched_only = reads is None and previous is not None and truncates(new_rows).isEmpty()
    parts = reconcile_parts(
        new_rows,
        new_signals,
        reads,
        columns,
        key,
        previous,
        stream=stream,
        wins=wins,
        touched_only=touched_only,
    )
    judged = parts.judged.cache() if parts.judged is not None else None  # counted, and used by the state
    closed = parts.windows.where(F.col("_cdc_high").isNotNull()).select("_cdc_chunk_id")
    # by file, not by row: a chunk that read no rows (a range emptied by deletes or a truncate) still
    # closes its window
    closed_ids = {r[0] for r in closed.collect()}
    judged_now = [p.stem for p in run.chunks if p.stem in closed_ids]
    is_new = newer_than(run.meta.position)
    own = F.col(OP).isin(*ROW_OPS)
    seen = rows.select(POSITION, OP, F.lit(True).alias("_cdc_own")).unionByName(
        signals.select(POSITION, OP, F.lit(False).alias("_cdc_own"))
    )
    totals = seen.agg(
        F.max(F.when(is_new, F.col(POSITION))).alias("top"),
        F.count_if(~is_new).alias("late"),
        F.count_if(is_new & own & F.col("_cdc_own")).alias("applied"),
        F.count_if(is_new & (F.col(OP) == "d") & F.col("_cdc_own")).alias("deletes"),
    ).first()
    meta = next_meta(run, judged_now, position_of(totals["top"]))
    spark = rows.sparkSession
    judged_ids = spark.createDataFrame([(c,) for c in sorted(meta.judged)], "_cdc_chunk_id string")
    pending = pending_windows(parts.windows, coll, judged_ids).cache()
    keys = parts.keys.cache()
    state = kept_keys(keys)  # parts.state, over the cached keys
    counted = keys.agg(
        F.count_if(F.col(KEPT)).alias("rows"),
        F.count_if(F.col(KEPT) & (F.size("_cdc_unknown") > 0)).alias("unknown"),
        F.count_if(F.col(HAD_PREVIOUS) & ~F.col(KEPT)).alias("removed"),
    ).first()
    reads_total = reads.count() if reads is not None else 0
    kept = dropped = 0
    if judged is not None:
        judgement = judged.agg(
            F.count_if(~F.col("_cdc_dropped")).alias("kept"),
            F.count_if(F.col("_cdc_dropped")).alias("dropped"),
        ).first()
        kept, dropped = judgement["kept"], judgement["dropped"]
    windows_pending = pending.count()
    info: dict[str, Any] = {
        "rows": counted["rows"],
        # the stream never sent these rows a value for some column (a key change of a row with an
        # unchanged TOAST value under REPLICA IDENTITY DEFAULT, read before the change): re-snapshot them
        "rows_with_unknown_columns": counted["unknown"],
        "position": list(meta.position) if meta.position is not None else None,
        "events_applied": totals["applied"],
        "deletes": totals["deletes"],
        "late_events_ignored": totals["late"],  # at or before the previous state's position: in it
        "reads": reads_total,
        "reads_applied": kept,
        "reads_dropped": dropped,
        "reads_waiting": reads_total - kept - dropped,  # their window has not closed in the stream yet
        "windows_pending": windows_pending,
        "keys_removed_since_previous": counted["removed"],
    }
    cached = (stream, wins, pending, keys) + ((judged,) if judged is not None else ())
    # nothing pending, nothing to carry: the next run then reads no carry at all
    carried = carry(new_rows, new_signals, pending) if windows_pending else None
    return RunResult(state, carried, info, meta.to_json(), cached)
