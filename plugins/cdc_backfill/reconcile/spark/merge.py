"""docs/design.md §6 as DataFrame -> DataFrame functions (one collection at a time, typed columns).

    signal rows --find_windows()----------------------------.  (found on the driver: reconcile.windows)
    log rows --typed_stream(columns)--> stream rows --------+--> merged_keys() --kept_keys()--> state
    READ chunks --judged_reads(windows, stream)--read_rows()-'
    previous state --previous_rows()------------------------'

The input is typed already (``eventlog.spark.rows``: the collection's log rows and the signal collection's),
in the table's own column types, as the snapshot chunks store them: keys join as values and no text
is parsed here. Positions are binary keys, compared byte by byte. Each row carries a sort key (``sort_key``) =
(position, priority, file, line): a previous state's row at the position it is as of, before a stream
event at the same position (which is the same event, replayed from the carry); a surviving READ at its
window's high after any stream event there.

Incremental runs (rule 6). A run reads the previous state, the log rows it has not read yet, and a
*carry* the previous run left: the signal rows of this collection's windows whose READ chunk it has not
judged yet, and the collection's events after the lowest low of those windows. A window that
straddles two runs is thus found whole, and a READ read late is judged against every event of its
window and sorted against the later deletes and truncates exactly as one run over everything would.
Replaying a carried event is harmless: it ties with the state row it produced. The state keeps, per
row, the columns whose value no event sent yet (``_cdc_unknown``: an unchanged TOAST column of a key
first seen by an update), so that a READ dropped in a later run can still fill them.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_backfill.eventlog.schema import LINE, OP, ORIGIN, POSITION, UNCHANGED
from cdc_backfill.names import spark_string
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.runs import ReadSpan
from cdc_backfill.reconcile.spark.key_changes import with_key_change_fills
from cdc_backfill.reconcile.spark.sort_key import POSITION as SORT_POSITION
from cdc_backfill.reconcile.spark.sort_key import sort_columns, sort_position
from cdc_backfill.reconcile.spark.spans import marked_by_spans, window_high
from cdc_backfill.reconcile.spark.winners import (
    FILL_ONLY_PRIORITY,
    HAD_PREVIOUS,
    INSIDE,
    KEPT,
    PRIORITY_PREVIOUS,
    PRIORITY_READ,
    PRIORITY_STREAM,
    READS_APPLIED,
    kept_keys,
    merged_judging_reads,
    merged_keys,
)
from cdc_backfill.reconcile.windows import SUFFIXES, SignalRow, Window
from cdc_backfill.signals.model import EXECUTE, WATERMARK_SUFFIX_PATTERN
from cdc_backfill.spark.column_types import spark_type
from cdc_backfill.spark.driver_frames import empty_frame, local_frame
from cdc_backfill.spark.positions import key_literal
from cdc_backfill.state.table import STATE_POSITION, UNKNOWN

ROW_OPS = ("c", "u", "d", "r")


WINDOW_SCHEMA = T.StructType([
    T.StructField("_cdc_chunk_id", T.StringType()), T.StructField("_cdc_for", T.StringType()),
    T.StructField("_cdc_signal", T.StringType()), T.StructField("_cdc_low", T.BinaryType()),
    T.StructField("_cdc_high", T.BinaryType()),
])  # fmt: skip


def signal_rows(signals: DataFrame) -> list[SignalRow]:
    """The signal collection's rows a run's windows and marks come from (``reconcile.windows``),
    collected: one Spark job with no shuffle, over rows that are a few per chunk."""
    named = reduce(operator.or_, [F.col("id").endswith(s) for s in SUFFIXES])
    wanted = F.col(OP).isin("c", "r", "d") & (named | (F.col("type") == EXECUTE))
    return [SignalRow(*r) for r in signals.where(wanted).select("id", OP, POSITION, "data", "type").collect()]


def window_frame(spark: SparkSession, found: Sequence[Window]) -> DataFrame:
    """Windows (``reconcile.windows.find_windows``) as a local frame: (chunk_id, collection, signal,
    low, high), high null while open."""
    rows = [Row(_cdc_chunk_id=w.chunk_id, _cdc_for=w.collection, _cdc_signal=w.snapshot, _cdc_low=w.low,
                _cdc_high=w.high) for w in found]  # fmt: skip
    return local_frame(spark, rows, WINDOW_SCHEMA)


def window_chunk_id() -> Column:
    """The chunk a signal row belongs to: its ``id`` without ``-open``/``-close`` (the rule of
    ``signals.model.chunk_of``, as a column expression)."""
    return F.regexp_replace("id", WATERMARK_SUFFIX_PATTERN, "")


def typed_stream(rows: DataFrame, columns: Sequence[PgColumn], key: Sequence[str]) -> DataFrame:
    """The collection's row events as the rules' rows: key columns, value columns, ``_present`` (per
    column, was the value sent: false for unchanged TOAST and for the non-key columns of a delete),
    ``_deleted``, ``_sort``. Truncates are left out (see :func:`truncates`)."""
    ev = rows.where(F.col(OP).isin(*ROW_OPS))
    deleted = F.col(OP) == "d"
    unchanged = F.coalesce(F.col(UNCHANGED), F.array().cast("array<string>"))
    present = [
        (F.lit(True) if c.name in key else ~deleted & ~F.array_contains(unchanged, c.name)).alias(c.name)
        for c in columns
    ]
    return ev.select(
        *[F.col(c.name) for c in columns],
        F.struct(*present).alias("_cdc_present"),
        deleted.alias("_cdc_deleted"),
        *sort_columns(F.col(POSITION), PRIORITY_STREAM, F.col(ORIGIN), F.col(LINE)),
    )


def truncates(rows: DataFrame) -> DataFrame:
    return rows.where(F.col(OP) == "t").select(F.col(POSITION).alias("position"))


def judged_reads(
    reads: DataFrame, wins: DataFrame, stream: DataFrame, truncs: DataFrame | None, key: Sequence[str]
) -> DataFrame:
    """§6 rules 1 and 2 on the READ rows: those whose window has closed, each with its window
    (``_cdc_low``, ``_cdc_high``) and ``_cdc_dropped``: the stream has an event for the row's key, or a
    truncate, strictly inside it (``truncs`` None: the caller knows there is none). A READ row waits
    (is left out) while its window is missing or open. The stream is joined once, by key, and only its
    keys and positions; Spark chooses how."""
    closed = wins.where(F.col("_cdc_high").isNotNull())
    r = in_windows(reads, wins)
    position = sort_position().alias("_cdc_p")
    touched = stream.select(*key, position)
    hit = touched.join(r.select(*key, "_cdc_chunk_id", "_cdc_low", "_cdc_high"), list(key))
    hit = hit.where((F.col("_cdc_p") > F.col("_cdc_low")) & (F.col("_cdc_p") < F.col("_cdc_high")))
    by_key = hit.select(*key, "_cdc_chunk_id").distinct().withColumn("_cdc_hit", F.lit(True))
    judged = r.join(by_key, [*key, "_cdc_chunk_id"], "left")
    if truncs is None:
        judged = judged.withColumn("_cdc_cut", F.lit(False))
    else:
        cut = closed.crossJoin(truncs.select(F.col("position").alias("_cdc_t"))).where(
            (F.col("_cdc_t") > F.col("_cdc_low")) & (F.col("_cdc_t") < F.col("_cdc_high"))
        )
        by_truncate = cut.select("_cdc_chunk_id").distinct().withColumn("_cdc_cut", F.lit(True))
        judged = judged.join(F.broadcast(by_truncate), "_cdc_chunk_id", "left")
    return judged.withColumn(
        "_cdc_dropped", F.coalesce(F.col("_cdc_hit") | F.col("_cdc_cut"), F.lit(False))
    ).drop("_cdc_hit", "_cdc_cut")


def in_windows(reads: DataFrame, wins: DataFrame) -> DataFrame:
    """The READ rows whose window has closed, with it (``_cdc_low``, ``_cdc_high``); the others wait."""
    closed = wins.where(F.col("_cdc_high").isNotNull()).select("_cdc_chunk_id", "_cdc_low", "_cdc_high")
    return reads.join(closed, "_cdc_chunk_id")


def read_rows(judged: DataFrame, columns: Sequence[PgColumn]) -> tuple[DataFrame, DataFrame]:
    """(READ rows kept, READ rows dropped) of :func:`judged_reads` as typed rows with ``_sort``.

    A kept row takes its window's high. Dropped rows are returned at the window's low as fill-only rows:
    they supply columns that a TOAST-only update inside the window did not send (see the reference's
    ``_apply``).
    """
    dropped = F.col("_cdc_dropped")
    return (
        placed_reads(judged.where(~dropped), columns, "_cdc_high", PRIORITY_READ),
        placed_reads(judged.where(dropped), columns, "_cdc_low", FILL_ONLY_PRIORITY),
    )


def placed_reads(df: DataFrame, columns: Sequence[PgColumn], at: str, priority: int) -> DataFrame:
    """READ rows as typed rows at the position ``at`` names, every column sent."""
    names = [c.name for c in columns]
    have = {f.name: f.dataType for f in df.schema.fields}
    # a column of the chunk files already of its type is selected by name: each cast is calls to the JVM
    # while the driver plans (25 ms of a 1M-event run for 6 columns)
    wanted = [spark_type(c) for c in columns]
    typed = [n if have.get(n) == t else F.col(n).cast(t).alias(n) for n, t in zip(names, wanted, strict=True)]
    return df.select(
        *typed,
        F.expr(f"named_struct({', '.join(f'{spark_string(n)}, true' for n in names)})").alias("_cdc_present"),
        F.lit(False).alias("_cdc_deleted"),
        *sort_columns(F.col(at), priority),
    )


def reads_beside_stream(
    reads: DataFrame,
    found: Sequence[Window],
    stream: DataFrame,
    columns: Sequence[PgColumn],
    key: Sequence[str],
    spans: Sequence[ReadSpan] | None = None,
) -> list[DataFrame]:
    """The stream and the READ rows at their window's high, for ``winners.merged_judging_reads``: each
    stream row marked ``_cdc_inside`` when it is strictly inside the window of its key's READ row (the
    READ rows' keys and windows broadcast, so the stream is read once, with no shuffle of its own).
    ``spans`` (``reconcile.runs.stream_spans``): the closed chunks' key ranges and windows, where they tell
    which chunk a key's READ row is in; then the stream is marked by comparing its key and position with
    them, with no join: no broadcast of the READ rows' keys for the driver to build before the merge
    starts (0.3 s of a 1M-event run); and the READ rows take their window's high from them the same way."""
    no_mark = F.lit(None).cast("boolean").alias(INSIDE)
    if spans is not None:
        high = window_high("_cdc_chunk_id", spans).alias("_cdc_high")
        placed = reads.select("*", high).where(F.col("_cdc_high").isNotNull())
        reads_placed = placed_reads(placed, columns, "_cdc_high", PRIORITY_READ).select("*", no_mark)
        return [marked_by_spans(stream, key[0], SORT_POSITION, spans, INSIDE), reads_placed]
    placed = in_windows(reads, window_frame(stream.sparkSession, found))
    reads_placed = placed_reads(placed, columns, "_cdc_high", PRIORITY_READ).select("*", no_mark)
    windows_of = F.broadcast(
        placed.select(*[F.col(k).alias(f"_cdc_k{i}") for i, k in enumerate(key)], "_cdc_low", "_cdc_high")
    )
    same = reduce(operator.and_, [stream[k] == windows_of[f"_cdc_k{i}"] for i, k in enumerate(key)])
    p = sort_position()
    inside = (p > F.col("_cdc_low")) & (p < F.col("_cdc_high"))
    marked = stream.join(windows_of, same, "left").select(*stream.columns, inside.alias(INSIDE))
    return [marked, reads_placed]


def previous_rows(previous: DataFrame, columns: Sequence[PgColumn]) -> DataFrame:
    """A previous state as rows at the positions they are as of, before a stream event there (the same
    event, replayed from the carry); its unknown columns count as not sent."""
    names = [c.name for c in columns]
    unknown = F.col(UNKNOWN)
    return previous.select(
        *names,
        F.struct(*[(~F.array_contains(unknown, n)).alias(n) for n in names]).alias("_cdc_present"),
        F.lit(False).alias("_cdc_deleted"),
        *sort_columns(F.col(STATE_POSITION), PRIORITY_PREVIOUS),
    )


def newer_than(position: Sequence[int] | None) -> Column:
    """True for log rows after ``position`` (a state's); earlier ones are in that state already."""
    if position is None:
        return F.lit(True)
    return F.col(POSITION) > key_literal(position)


def after_position(rows: DataFrame, position: Sequence[int] | None) -> DataFrame:
    # a first run's rows as they are: a filter that keeps everything is still a frame the driver analyses
    return rows if position is None else rows.where(newer_than(position))


def carry(rows: DataFrame, signals: DataFrame, pending: DataFrame) -> tuple[DataFrame, DataFrame]:
    """What the next run needs again: (the collection's log rows after the lowest low of the pending
    windows, the signal rows of those windows); both empty when nothing is pending."""
    signal_rows = (
        signals.withColumn("_cdc_chunk_id", window_chunk_id())
        .join(pending.select("_cdc_chunk_id"), "_cdc_chunk_id", "left_semi")
        .drop("_cdc_chunk_id")
    )
    since = pending.agg(F.min("_cdc_low").alias("_cdc_since"))
    kept = rows.crossJoin(since).where(F.col(POSITION) > F.col("_cdc_since")).drop("_cdc_since")
    return kept, signal_rows


@dataclass(frozen=True)
class ReconcileParts:
    """The state and the frames it came from."""

    keys: DataFrame  # merged_keys: the state's keys and the ones it lost
    stream: DataFrame  # the collection's row events, typed

    @property
    def state(self) -> DataFrame:
        return kept_keys(self.keys)


def reconcile_parts(
    stream: DataFrame,
    truncs: DataFrame | None,
    reads: DataFrame | None,
    found: Sequence[Window],
    columns: Sequence[PgColumn],
    key: Sequence[str],
    *,
    previous: DataFrame | None = None,
    removed: DataFrame | None = None,
    touched_only: bool = False,
    key_changes: bool = False,
    left_out: int | None = None,
    reads_once: bool = False,
    spans: Sequence[ReadSpan] | None = None,
) -> ReconcileParts:
    """§6 in order, over one collection: the READ rows judged against the windows ``found`` (rules 1 and
    2) beside the stream (``typed_stream``), the previous state and the remembered removals (rule 6);
    the key changes' fills (rule 8); latest wins (rule 4). Phantoms (rule 7) are the caller's, on the
    keys this returns.

    ``truncs``: the collection's truncates (``truncates``); None where the caller knows there are none
    (each look is a scan of the log). ``removed``: the remembered removals of the keys the stream names,
    as delete rows (``removals.removal_rows``). ``touched_only``: no READ rows and no truncate: only the
    previous state's rows of keys the stream names are merged again, and every other row passes
    through as it is (its winner is itself), without a shuffle. ``key_changes``: the run has creates
    that left columns out (``key_changes``). ``left_out``: see :func:`merged_keys`.

    The one fast path: where no key has two READ rows (``reads_once``, ``reconcile.runs.reads_once``),
    no truncate and no row that left a column out, rule 2 is judged inside rule 4's pass
    (``winners.merged_judging_reads``), the stream marked where it is read (``spans``: see
    :func:`reads_beside_stream`): the stream is read once and not joined. It stays because
    ``bench.reconcile`` shows it worth more than a tenth of the run (docs/benchmarks.md)."""
    if reads is not None and reads_once and truncs is None and left_out == 0 and not key_changes:
        parts = reads_beside_stream(reads, found, stream, columns, key, spans)
        unjudged = F.lit(None).cast("boolean").alias(INSIDE)
        if previous is not None:
            parts.append(previous_rows(previous, columns).select("*", unjudged))
        if removed is not None:
            parts.append(removed.select("*", unjudged))
        return ReconcileParts(
            merged_judging_reads(reduce(DataFrame.unionByName, parts), columns, key), stream
        )
    parts = [stream]
    if reads is not None:
        wins = window_frame(stream.sparkSession, found)
        parts += read_rows(judged_reads(reads, wins, stream, truncs, key), columns)
    untouched = None
    if previous is not None:
        if touched_only and reads is None:
            named = F.broadcast(stream.select(*key).distinct())
            untouched = previous.join(named, list(key), "left_anti")
            previous = previous.join(named, list(key), "left_semi")
        parts.append(previous_rows(previous, columns))
    if removed is not None:
        parts.append(removed)
    merged = reduce(DataFrame.unionByName, parts)
    if key_changes:
        some = truncs if truncs is not None else empty_frame(stream.sparkSession, "position binary")
        merged = with_key_change_fills(merged, stream, some, columns, key, FILL_ONLY_PRIORITY)
    keys = merged_keys(merged, truncs, columns, key, left_out)
    if untouched is not None:
        keys = keys.unionByName(as_kept_keys(untouched, columns))
    return ReconcileParts(keys, stream)


def as_kept_keys(previous: DataFrame, columns: Sequence[PgColumn]) -> DataFrame:
    """Previous state rows as :func:`merged_keys` would give them back when nothing else names them."""
    return previous.select(
        *[c.name for c in columns],
        STATE_POSITION,
        UNKNOWN,
        F.lit(True).alias(KEPT),
        F.lit(True).alias(HAD_PREVIOUS),
        F.lit(0).cast("long").alias(READS_APPLIED),
    )
