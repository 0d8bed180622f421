"""The removals a state remembers (docs/design.md §6 rule 6): per key removed, the position of its removal.

The stream's events can arrive out of their order (DataWorks' full load and changes on one topic, Kafka's
partitions read at different paces). An event of a key from before that key's delete, arriving after
the state applied the delete, must not bring the key back: the state has no row left to win against
it, so the delete's position is kept beside the state and competes again as a delete row whenever the
stream names the key. A state row is its own memory (it wins against anything older); a truncate is
remembered as one position (``RunMeta.truncated``), and removals before it are dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_backfill.eventlog.schema import OP, POSITION
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.runs import RunInput
from cdc_backfill.reconcile.spark.merge import truncates
from cdc_backfill.reconcile.spark.phantoms import phantom, removed_at
from cdc_backfill.reconcile.spark.sort_key import sort_columns
from cdc_backfill.reconcile.spark.winners import PRIORITY_REMOVED
from cdc_backfill.spark.column_types import spark_type
from cdc_backfill.spark.positions import key_literal, position_of

REMOVED_AT = "_cdc_position"  # a removal's position, beside its key columns


def removals_schema(columns: Sequence[PgColumn], key: Sequence[str]) -> T.StructType:
    by_name = {c.name: c for c in columns}
    return T.StructType(
        [T.StructField(k, spark_type(by_name[k])) for k in key] + [T.StructField(REMOVED_AT, T.BinaryType())]
    )


def removal_rows(
    removed: DataFrame, stream: DataFrame, columns: Sequence[PgColumn], key: Sequence[str]
) -> DataFrame:
    """The removals of the keys ``stream`` names as the merge's delete rows, at their positions: a stream
    event there is the same delete replayed, and sorts after it."""
    named = removed.join(stream.select(*key).distinct(), list(key), "left_semi")
    return named.select(
        *[F.col(c.name) if c.name in key else F.lit(None).cast(spark_type(c)).alias(c.name) for c in columns],
        F.struct(*[F.lit(c.name in key).alias(c.name) for c in columns]).alias("_cdc_present"),
        F.lit(True).alias("_cdc_deleted"),
        *sort_columns(F.col(REMOVED_AT), PRIORITY_REMOVED),
    )


def next_removals(
    removed: DataFrame | None,
    rows: DataFrame,
    key: Sequence[str],
    truncated: Sequence[int] | None,
    phantoms: DataFrame | None = None,
) -> DataFrame:
    """The removals after a run: those remembered, the deletes among the run's log rows ``rows`` and the
    phantoms it removed (key columns and ``_cdc_position``), the latest per key, after the latest
    truncate ``truncated``."""
    deletes = rows.where(F.col(OP) == "d").select(*key, F.col(POSITION).alias(REMOVED_AT))
    every = reduce(DataFrame.unionByName, [f for f in (deletes, removed, phantoms) if f is not None])
    if truncated is not None:
        every = every.where(F.col(REMOVED_AT) > key_literal(truncated))
    return every.groupBy(*key).agg(F.max(REMOVED_AT).alias(REMOVED_AT))


def after_truncate(run: RunInput, rows: DataFrame) -> DataFrame:
    """Log rows after the latest truncate the state applied: what came before it is gone, late or not."""
    if run.meta.truncated is None:
        return rows
    return rows.where(F.col(POSITION) > key_literal(run.meta.truncated))


def latest_truncate(rows: DataFrame | None) -> tuple[int, ...] | None:
    """The position of the latest truncate among ``rows`` (None: no rows to look at, or no truncate)."""
    if rows is None:
        return None
    found = truncates(rows).agg(F.max("position")).first()[0]
    return position_of(found) if found is not None else None


def phantom_removals(previous: DataFrame | None, removals: list[Any], key: Sequence[str]) -> DataFrame | None:
    """The previous state's rows the phantom rule removes, as removals at the P0 that removes them."""
    gone = phantom(removals)
    if previous is None or gone is None:
        return None
    return previous.where(gone).select(*key, removed_at(removals).alias(REMOVED_AT))
