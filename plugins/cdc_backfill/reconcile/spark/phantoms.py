"""The phantom rule (docs/design.md §6 rule 7) on Spark: the start and done rows of snapshots among the
signal rows, and the state rows a finished snapshot removes (see ``cdc_backfill.reconcile.phantoms``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdc_backfill.eventlog.schema import OP, POSITION
from cdc_backfill.reconcile.debezium_snapshots import start_marks
from cdc_backfill.reconcile.key_conditions import AllOf, AnyOf, Compare, IsNull, KeyCondition, Negate
from cdc_backfill.reconcile.phantoms import Removal
from cdc_backfill.signals.marks import DONE_SUFFIX, ENDED_SUFFIX, START_SUFFIX, Mark, mark_of
from cdc_backfill.signals.model import EXECUTE
from cdc_backfill.spark.positions import key_literal, position_of

_OPS = {
    "=": lambda c, v: c == v,
    "<>": lambda c, v: c != v,
    "<": lambda c, v: c < v,
    "<=": lambda c, v: c <= v,
    ">": lambda c, v: c > v,
    ">=": lambda c, v: c >= v,
}


def mark_rows(signals: DataFrame, collection: str) -> DataFrame:
    """The start, done and ended rows naming ``collection`` among the signal collection's log rows."""
    return signals.where(
        F.col(OP).isin("c", "r")
        & (
            F.col("id").endswith(START_SUFFIX)
            | F.col("id").endswith(DONE_SUFFIX)
            | F.col("id").endswith(ENDED_SUFFIX)
        )
        & (F.get_json_object("data", "$['data-collection']") == collection)
    ).select("id", "data", POSITION)


def marks_of(rows: Sequence[Any]) -> list[Mark]:
    """Collected :func:`mark_rows` as marks (a row whose data does not parse is not a mark)."""
    out = []
    for r in rows:
        try:
            data = json.loads(r["data"] or "{}")
        except ValueError:
            continue
        position = position_of(r[POSITION])
        mark = mark_of(r["id"], data, position) if isinstance(data, dict) and position else None
        if mark is not None:
            out.append(mark)
    return out


def condition_column(cond: KeyCondition) -> Column:
    if isinstance(cond, Compare):
        return _OPS[cond.op](F.col(cond.column), F.lit(cond.value))
    if isinstance(cond, IsNull):
        return F.col(cond.column).isNull()
    if isinstance(cond, Negate):
        return ~condition_column(cond.part)
    parts = [condition_column(p) for p in cond.parts]
    out = parts[0]
    for p in parts[1:]:
        out = (out & p) if isinstance(cond, AllOf) else (out | p)
    assert isinstance(cond, AllOf | AnyOf)
    return out


def phantom(removals: Sequence[Removal]) -> Column | None:
    """True for a state row (``_cdc_position``, key columns) that one of ``removals`` removes; None when
    there is nothing to remove. A condition that is NULL for a row does not select it, as in SQL."""
    if not removals:
        return None
    out: Column | None = None
    for r in removals:
        before = F.col("_cdc_position") < key_literal(r.p0)
        this = (
            before
            if r.condition is None
            else before & F.coalesce(condition_column(r.condition), F.lit(False))
        )
        out = this if out is None else out | this
    return out


MARK = "_cdc_mark"
PHANTOM = "_cdc_phantom"  # a state row a finished snapshot removes


def with_marks(found: DataFrame, signals: DataFrame, collection: str, executes: bool = False) -> DataFrame:
    """:func:`~cdc_backfill.reconcile.spark.merge.windows` and the collection's start and done rows in one
    frame (``_cdc_mark``), so that one Spark job collects both: a mark's id, data and position ride in
    the window columns ``_cdc_chunk_id``, ``_cdc_signal`` and ``_cdc_low``. ``executes``: the
    execute-snapshot rows too (``_cdc_for`` is then their type), which start Debezium's snapshots."""
    rows = mark_rows(signals, collection).withColumn("_cdc_type", F.lit(None).cast("string"))
    if executes:
        rows = rows.unionByName(
            signals.where(F.col(OP).isin("c", "r") & (F.col("type") == EXECUTE)).select(
                "id", "data", POSITION, F.col("type").alias("_cdc_type")
            )
        )
    marks = rows.select(
        F.col("id").alias("_cdc_chunk_id"),
        F.coalesce(F.col("_cdc_type"), F.lit(collection)).alias("_cdc_for"),
        F.col("data").alias("_cdc_signal"),
        F.col(POSITION).alias("_cdc_low"),
        F.lit(None).cast(found.schema["_cdc_high"].dataType).alias("_cdc_high"),
        F.lit(True).alias(MARK),
    )
    return found.withColumn(MARK, F.lit(False)).unionByName(marks)


def split_marks(rows: Sequence[Any], collection: str) -> tuple[list[Any], list[Mark]]:
    """Collected :func:`with_marks` as (window rows, marks): the engine's start, done and ended rows,
    and a Debezium snapshot's start for each execute-snapshot row naming ``collection``."""
    wins = [r for r in rows if not r[MARK]]
    engine = [r for r in rows if r[MARK] and r["_cdc_for"] != EXECUTE]
    marks = marks_of(
        [{"id": r["_cdc_chunk_id"], "data": r["_cdc_signal"], POSITION: r["_cdc_low"]} for r in engine]
    )
    executes = [
        (r["_cdc_chunk_id"], EXECUTE, r["_cdc_signal"], position_of(r["_cdc_low"]))
        for r in rows
        if r[MARK] and r["_cdc_for"] == EXECUTE
    ]
    return wins, marks + start_marks(executes, collection)
