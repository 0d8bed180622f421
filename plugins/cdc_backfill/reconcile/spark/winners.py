"""docs/design.md §6's merge: per key, the winning row and the values it carries
(``merge.reconcile_parts`` feeds it the stream, the judged READ rows and the previous state, each row
with ``_cdc_present``, ``_cdc_deleted`` and the sort key's columns (``sort_key``): position, priority, file, line).

Where no row left a value column out, each key takes its winner whole, one buffer per key as the bare
floor does; else each key keeps a buffer per column, to take each column from the last row that sent
it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.spark.sort_key import sort_key, sort_position, sort_priority
from cdc_backfill.state.table import STATE_POSITION, UNKNOWN

# the sort key's priorities at one position
PRIORITY_PREVIOUS, PRIORITY_STREAM, PRIORITY_READ = -1, 0, 1
# a remembered removal (``removals``): a delete, the previous state's as its rows are, not counted as one
PRIORITY_REMOVED = -2
FILL_ONLY_PRIORITY = -3  # a dropped READ: supplies unchanged columns, never wins

KEPT, HAD_PREVIOUS = "_cdc_kept", "_cdc_had_previous"
# per key, its READ rows that were not dropped: the run counts the READs applied as it writes the state,
# so the judgement runs inside the merge and is not counted by a job of its own
READS_APPLIED = "_cdc_reads_applied"


def kept_keys(keys: DataFrame) -> DataFrame:
    return keys.where(F.col(KEPT)).drop(KEPT, HAD_PREVIOUS, READS_APPLIED)


def reads_applied() -> Column:
    return F.count_if(sort_priority() == PRIORITY_READ).alias(READS_APPLIED)


def merged_keys(
    rows: DataFrame,
    truncs: DataFrame | None,
    columns: Sequence[PgColumn],
    key: Sequence[str],
    left_out: int | None = None,
) -> DataFrame:
    """Every key the rows name, with ``_cdc_kept`` (it is in the state), ``_cdc_had_previous`` (the
    previous state had it) and ``_cdc_reads_applied`` (its READ rows not dropped), so that one pass
    counts the state, the keys it lost and the READs applied. Per key: the last row by its sort key
    wins (fill-only rows never do); each column not sent takes the last value sent before it; a winning
    delete removes the key; the latest truncate removes keys whose winner is before it. Returns the
    typed state with ``_cdc_position`` and ``_cdc_unknown``.

    ``left_out``: how many rows (at most) left a value column out (an unchanged TOAST column, a previous
    state's unknown column, a key change's create), when the caller has counted them. 0: every key takes
    its winner whole (:func:`merged_by_winner`), one buffer per key, as the bare floor does; else, or
    None (not counted), every key keeps a buffer per column (:func:`merged_by_column`). ``truncs`` None:
    the caller knows there is no truncate.
    """
    values = [c.name for c in columns if c.name not in key]
    if not values or left_out == 0:
        return merged_by_winner(rows, truncs, columns, key)
    return merged_by_column(rows, truncs, columns, key)


def competes() -> Column:
    return sort_priority() != FILL_ONLY_PRIORITY


def merged_by_winner(
    rows: DataFrame, truncs: DataFrame | None, columns: Sequence[PgColumn], key: Sequence[str]
) -> DataFrame:
    """:func:`merged_keys` for keys whose rows all sent every column (deletes aside): the winner whole,
    one buffer per key. A kept winner is after every delete of its key and after the latest truncate,
    so each value is its own and none is unknown. Fill-only rows supply only what a winner did not send:
    here they are left out (and with them, where they are literals, their part of the plan)."""
    sort = sort_key()
    per_key = (
        rows.where(competes())
        .groupBy(*key)
        .agg(
            F.max_by(whole_row(columns, key), sort).alias("_cdc_w"),
            F.max(sort_priority() == PRIORITY_PREVIOUS).alias(HAD_PREVIOUS),
            reads_applied(),
        )
    )
    w, t = F.col("_cdc_w"), F.col("_cdc_t")
    after_truncate = t.isNull() | (w.getField("position") > t)
    return with_latest_truncate(per_key, truncs).select(
        *whole_state(w, columns, key, after_truncate), HAD_PREVIOUS, READS_APPLIED
    )


def whole_row(columns: Sequence[PgColumn], key: Sequence[str]) -> Column:
    """A row taken whole by the merge: whether it deletes, its position and its value columns."""
    position = sort_position().alias("position")
    return F.struct(
        F.col("_cdc_deleted").alias("deleted"),
        position,
        *[F.col(c.name) for c in columns if c.name not in key],
    )


def whole_state(w: Column, columns: Sequence[PgColumn], key: Sequence[str], kept_too: Column) -> list[Column]:
    """The state's columns from a key's winning :func:`whole_row` ``w`` (null: none): its values, none
    unknown, kept when it is not a delete and ``kept_too`` holds."""
    kept = w.isNotNull() & ~w.getField("deleted") & kept_too
    return [
        *[F.col(c.name) if c.name in key else w.getField(c.name).alias(c.name) for c in columns],
        w.getField("position").alias(STATE_POSITION),
        F.array().cast("array<string>").alias(UNKNOWN),
        F.coalesce(kept, F.lit(False)).alias(KEPT),
    ]


# on a stream row of a key that has a READ row: the row is strictly inside that READ row's window
INSIDE = "_cdc_inside"


def merged_judging_reads(rows: DataFrame, columns: Sequence[PgColumn], key: Sequence[str]) -> DataFrame:
    """:func:`merged_by_winner` that judges the READ rows in the same pass, for rows where each key has
    at most one READ row (at its window's high) and no truncate: the READ is dropped when a stream row of
    its key is inside its window (``_cdc_inside``, marked where the stream is read). Per key, the latest
    other row and the READ row are kept apart; the READ wins when it is not dropped and is not before
    that row (at one position, a READ is after the stream). No row here leaves a column out."""
    sort = sort_key()
    priority = sort_priority()
    winner = whole_row(columns, key)
    per_key = rows.groupBy(*key).agg(
        F.max_by(winner, F.when(priority != PRIORITY_READ, sort)).alias("_cdc_o"),
        # a key's one READ row (the caller's rows have at most one): no ordering to keep beside it
        F.first(F.when(priority == PRIORITY_READ, winner), ignorenulls=True).alias("_cdc_r"),
        F.max(F.col(INSIDE)).alias("_cdc_hit"),
        F.max(priority == PRIORITY_PREVIOUS).alias(HAD_PREVIOUS),
    )
    other, read = F.col("_cdc_o"), F.col("_cdc_r")
    applied = read.isNotNull() & ~F.coalesce(F.col("_cdc_hit"), F.lit(False))
    wins = applied & (other.isNull() | (read.getField("position") >= other.getField("position")))
    w = F.when(wins, read).otherwise(other)
    return per_key.select(
        *whole_state(w, columns, key, F.lit(True)), HAD_PREVIOUS, applied.cast("long").alias(READS_APPLIED)
    )


def with_latest_truncate(per_key: DataFrame, truncs: DataFrame | None) -> DataFrame:
    """``per_key`` with ``_cdc_t``, the latest truncate's position (null: none)."""
    if truncs is None:
        return per_key.withColumn("_cdc_t", F.lit(None).cast("binary"))
    return per_key.crossJoin(F.broadcast(truncs.agg(F.max("position").alias("_cdc_t"))))


def merged_by_column(
    rows: DataFrame, truncs: DataFrame | None, columns: Sequence[PgColumn], key: Sequence[str]
) -> DataFrame:
    """:func:`merged_keys` for any keys, with a buffer per column besides the winner's. The winner is
    the greatest row; every value column is the last row that *sent* it (the winner itself when it
    did). That value counts only if no delete of the key and no truncate came between it and the
    winner: a key deleted and created again (a key change carrying an unchanged TOAST value) must not
    take the old row's value. A kept winner is after the latest truncate, so only that one truncate
    can come between. Fill-only rows (dropped READs, at their window's low) are always before the
    winner: the event that dropped them is after that low. A column with no value left counts as
    unknown (``_cdc_unknown``).
    """
    names = [c.name for c in columns]
    values = [n for n in names if n not in key]
    sort = sort_key()
    # max_by leaves out rows whose ordering is null: each buffer sees only the rows it is about
    per_key = rows.groupBy(*key).agg(
        F.max_by(
            F.struct(F.col("_cdc_deleted").alias("deleted"), sort.alias("s")), F.when(competes(), sort)
        ).alias("_cdc_w"),
        F.max(F.when(F.col("_cdc_deleted"), sort)).alias("_cdc_d"),
        F.max(sort_priority() == PRIORITY_PREVIOUS).alias(HAD_PREVIOUS),
        reads_applied(),
        *[
            F.max_by(
                F.struct(F.col(n).alias("v"), sort.alias("s")),
                F.when(F.col("_cdc_present").getField(n), sort),
            ).alias(n)
            for n in values
        ],
    )
    t, d, w = F.col("_cdc_t"), F.col("_cdc_d"), F.col("_cdc_w")

    def known(n: str) -> Column:
        sent = F.col(n)
        after_delete = d.isNull() | (sent.getField("s") > d)
        after_truncate = t.isNull() | (sent.getField("s").getField("position") > t)
        return sent.isNotNull() & after_delete & after_truncate

    position = w.getField("s").getField("position")
    kept = w.isNotNull() & ~w.getField("deleted") & (t.isNull() | (position > t))
    return with_latest_truncate(per_key, truncs).select(
        *[F.col(n) if n in key else F.when(known(n), F.col(n).getField("v")).alias(n) for n in names],
        position.alias(STATE_POSITION),
        F.array_compact(F.array(*[F.when(~known(n), F.lit(n)) for n in values]))
        .cast("array<string>")
        .alias(UNKNOWN),
        F.coalesce(kept, F.lit(False)).alias(KEPT),
        HAD_PREVIOUS,
        READS_APPLIED,
    )
