"""The log rows a run has not seen (docs/design.md §6 rule 6): those after the state's position, the late
ones (at or before it, in manifests the state has not read), and those the previous run carried; and what
one Spark job over them counts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cdc_backfill.eventlog.schema import OP, POSITION, UNCHANGED
from cdc_backfill.reconcile.runs import RunInput
from cdc_backfill.reconcile.spark.merge import ROW_OPS, after_position, newer_than


def after_state(run: RunInput, rows: DataFrame, carried: DataFrame | None) -> DataFrame:
    """Log rows (or signal rows) after the state's position, with those the previous run carried."""
    new = after_position(rows, run.meta.position)
    return new if carried is None else new.unionByName(carried)


def unseen(
    run: RunInput, rows: DataFrame, carried: DataFrame | None, fresh: tuple[DataFrame, DataFrame] | None
) -> DataFrame:
    """The collection's log rows the state has not seen: after its position, the late ones (``late``)
    and those the previous run carried. Where the state read none of ``rows``' manifests and their
    events arrive in any order, that is every row: read once, not as the rows after the position and
    the rows before it."""
    if run.meta.position is not None and run.any_order and fresh is None:
        return rows if carried is None else rows.unionByName(carried)
    new = after_state(run, rows, carried)
    late_rows = late(run, rows, fresh)
    return new if late_rows is None else new.unionByName(late_rows)


def late(run: RunInput, rows: DataFrame, fresh: tuple[DataFrame, DataFrame] | None) -> DataFrame | None:
    """The collection's log rows at or before the state's position that the state has not seen: those of
    the manifests it did not read (``fresh``; None: it read none of ``rows``' manifests). None where the
    landing's events arrive in position order: such a row is one delivered again, in the state already."""
    if run.meta.position is None or not run.any_order:
        return None
    return (rows if fresh is None else fresh[0]).where(~newer_than(run.meta.position))


def late_count(totals: Mapping[str, Any], fresh: tuple[DataFrame, DataFrame] | None, position: Any) -> int:
    """Events (and signal rows) at or before the state's position in manifests it did not read."""
    if fresh is None:
        return int(totals["late"])
    is_new = newer_than(position)
    return fresh[0].select(POSITION).unionByName(fresh[1].select(POSITION)).where(~is_new).count()


def stream_totals(rows: DataFrame, signals: DataFrame, position: Any) -> Mapping[str, Any]:
    """One Spark job over the new log rows: the top position, the late events and the run's counts."""
    is_new = newer_than(position)
    own = F.col("_cdc_own")
    seen = rows.select(POSITION, OP, UNCHANGED, F.lit(True).alias("_cdc_own")).unionByName(
        signals.select(
            POSITION, OP, F.lit(None).cast("array<string>").alias(UNCHANGED), F.lit(False).alias("_cdc_own")
        )
    )
    return (
        seen.agg(
            F.max(F.when(is_new, F.col(POSITION))).alias("top"),
            F.count_if(~is_new).alias("late"),
            F.count_if(is_new & F.col(OP).isin(*ROW_OPS) & own).alias("applied"),
            F.count_if(is_new & (F.col(OP) == "d") & own).alias("deletes"),
            F.count_if(is_new & (F.col(OP) == "t") & own).alias("truncates"),
            F.count_if(is_new & (F.col(OP) == "r") & own).alias("stream_reads"),  # Debezium's READ events
            # creates that left columns out: key changes of rows with an unchanged TOAST value
            F.count_if(is_new & (F.col(OP) == "c") & own & (F.size(UNCHANGED) > 0)).alias("left_out"),
            # any row event that left columns out (new or not: an upper bound for the merge's plan)
            F.count_if(F.col(OP).isin("c", "u", "r") & own & (F.size(UNCHANGED) > 0)).alias("unchanged"),
        )
        .first()
        .asDict()
    )
