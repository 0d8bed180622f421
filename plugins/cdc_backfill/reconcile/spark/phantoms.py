"""The phantom rule (docs/design.md §6 rule 7) on Spark: the state rows a finished snapshot removes (see
``cdc_backfill.reconcile.phantoms``; the start and done rows are found in ``reconcile.windows``)."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdc_backfill.reconcile.key_conditions import AllOf, AnyOf, Compare, IsNull, KeyCondition, Negate
from cdc_backfill.reconcile.phantoms import Removal
from cdc_backfill.spark.positions import key_literal
from cdc_backfill.state.table import STATE_POSITION

_OPS = {
    "=": lambda c, v: c == v,
    "<>": lambda c, v: c != v,
    "<": lambda c, v: c < v,
    "<=": lambda c, v: c <= v,
    ">": lambda c, v: c > v,
    ">=": lambda c, v: c >= v,
}


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
    for this in map(removes, removals):
        out = this if out is None else out | this
    return out


def removes(r: Removal) -> Column:
    before = F.col(STATE_POSITION) < key_literal(r.p0)
    return before if r.condition is None else before & F.coalesce(condition_column(r.condition), F.lit(False))


def removed_at(removals: Sequence[Removal]) -> Column:
    """Where a state row the phantom rule removes is removed (the latest P0 of the ``removals`` that
    remove it; null: none): an event of its key before that P0 must not bring it back."""
    return F.greatest(*[F.when(removes(r), key_literal(r.p0)) for r in removals], F.lit(None).cast("binary"))


PHANTOM = "_cdc_phantom"  # a state row a finished snapshot removes
