"""Key changes carry their unchanged columns (docs/design.md §5): when an ``UPDATE`` moves a row to a new key
and leaves a TOASTed column unchanged, PostgreSQL's stream does not send that column, and the capture
lands a delete of the old key at (commit, lsn, 0) and a create of the new key at (commit, lsn, 1). The
new key then takes the old key's values for the columns its create left out, exactly as one run over
everything would: the last value the old key had before the delete (from the previous state, an
earlier event, or a READ), unless a delete of the old key or a truncate came in between.

:func:`fill_rows` adds, per such pair, a fill-only row of the new key at the create's position (it
supplies values, it never wins). A chain of key changes in one run (a to b, then b to c) is resolved by
as many rounds as the chain is long.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.spark.sort_key import sort_columns, sort_key, sort_position

MAX_ROUNDS = 8  # longer chains of key changes inside one run keep their columns unknown (re-read)
_CREATE_TAIL = bytearray(b"\x01\x01")  # the last position element 1: the create of a key change
_DELETE_TAIL = bytearray(b"\x00")  # the last position element 0: its delete


def _old(k: str) -> str:
    return f"_cdc_old_{k}"


def key_change_pairs(stream: DataFrame, columns: Sequence[PgColumn], key: Sequence[str]) -> DataFrame:
    """Per key change whose create left columns out: the new key (the key columns), the old key
    (``_cdc_old_<k>``), the create's position ``_cdc_at``, the delete's ``_cdc_from`` and the create's
    ``_cdc_present``. A position ends in ``01 01`` only as a key change's create (``position_key``:
    each element is its byte count, then its bytes); the delete's is the same with ``00`` instead."""
    values = [c.name for c in columns if c.name not in key]
    p = F.col("_cdc_p")
    some_left_out = ~reduce(operator.and_, [F.col("_cdc_present").getField(n) for n in values])
    creates = (
        stream.where(~F.col("_cdc_deleted"))
        .withColumn("_cdc_p", sort_position())
        .where(
            some_left_out
            & (F.length(p) > 2)
            & (F.expr("substring(_cdc_p, length(_cdc_p) - 1, 2)") == F.lit(_CREATE_TAIL))
        )
        .select(
            *key,
            "_cdc_present",
            p.alias("_cdc_at"),
            F.concat(F.expr("substring(_cdc_p, 1, length(_cdc_p) - 2)"), F.lit(_DELETE_TAIL)).alias(
                "_cdc_from"
            ),
        )
    )
    deletes = stream.where(F.col("_cdc_deleted")).select(
        *[F.col(k).alias(_old(k)) for k in key], sort_position().alias("_cdc_from")
    )
    return creates.join(deletes, "_cdc_from")


def chain_rounds(pairs: Sequence[tuple[tuple[object, ...], tuple[object, ...], bytes]]) -> int:
    """How many rounds resolve every chain among ``(old key, new key, position)`` (pure): a pair whose
    old key an earlier pair created needs one round more than that pair."""
    depth: dict[tuple[object, ...], int] = {}
    deepest = 0
    for old, new, _ in sorted(pairs, key=lambda p: bytes(p[2])):
        d = depth.get(old, 0) + 1
        depth[new] = d
        deepest = max(deepest, d)
    return min(deepest, MAX_ROUNDS)


def fill_rows(
    rows: DataFrame,
    pairs: DataFrame,
    truncs: DataFrame,
    columns: Sequence[PgColumn],
    key: Sequence[str],
    fill_priority: int,
) -> DataFrame:
    """One fill-only row per pair: the new key at its create's position, carrying the old key's last
    known value of each column the create left out. ``rows``: every row of the merge (stream, READs,
    previous state) in the rules' shape."""
    names = [c.name for c in columns]
    values = [n for n in names if n not in key]
    sort = sort_key()
    wanted = pairs.select(
        *[F.col(_old(k)).alias(k) for k in key],
        *[F.col(k).alias(f"_cdc_new_{k}") for k in key],
        "_cdc_at",
        "_cdc_from",
        F.col("_cdc_present").alias("_cdc_sent"),
    )
    before = rows.join(wanted, list(key)).where(sort_position() < F.col("_cdc_from"))
    per_pair = before.groupBy("_cdc_at", "_cdc_from", *[f"_cdc_new_{k}" for k in key], "_cdc_sent").agg(
        F.max(F.when(F.col("_cdc_deleted"), sort)).alias("_cdc_d"),
        *[
            F.max_by(
                F.struct(F.col(n).alias("v"), sort.alias("s")),
                F.when(F.col("_cdc_present").getField(n), sort),
            ).alias(n)
            for n in values
        ],
    )
    latest = last_truncate_before(pairs, truncs)
    d, t = F.col("_cdc_d"), F.col("_cdc_t")

    def known(n: str) -> Column:
        sent = F.col(n)
        after_delete = d.isNull() | (sent.getField("s") > d)
        after_truncate = t.isNull() | (sent.getField("s").getField("position") > t)
        return sent.isNotNull() & after_delete & after_truncate & ~F.col("_cdc_sent").getField(n)

    return per_pair.join(latest, "_cdc_at").select(
        *[
            F.col(f"_cdc_new_{n}").alias(n) if n in key else F.when(known(n), F.col(n).getField("v")).alias(n)
            for n in names
        ],
        F.struct(
            *[(F.lit(False) if n in key else F.coalesce(known(n), F.lit(False))).alias(n) for n in names]
        ).alias("_cdc_present"),
        F.lit(False).alias("_cdc_deleted"),
        *sort_columns(F.col("_cdc_at"), fill_priority),
    )


def last_truncate_before(pairs: DataFrame, truncs: DataFrame) -> DataFrame:
    """Per pair, the last truncate before its delete: a value sent before it is not the old key's."""
    return (
        pairs.select("_cdc_at", "_cdc_from")
        .join(
            F.broadcast(truncs.select(F.col("position").alias("_cdc_tp"))),
            F.col("_cdc_tp") < F.col("_cdc_from"),
            "left",
        )
        .groupBy("_cdc_at")
        .agg(F.max("_cdc_tp").alias("_cdc_t"))
    )


def with_key_change_fills(
    rows: DataFrame,
    stream: DataFrame,
    truncs: DataFrame,
    columns: Sequence[PgColumn],
    key: Sequence[str],
    fill_priority: int,
) -> DataFrame:
    """``rows`` and the fill rows of this run's key changes, at ``fill_priority`` (rows that supply
    columns and never win). Collects the pairs' keys to count the rounds: call it only when the run
    has creates that left columns out."""
    if all(c.name in key for c in columns):
        return rows
    pairs = key_change_pairs(stream, columns, key)
    seen = [
        (tuple(r[_old(k)] for k in key), tuple(r[k] for k in key), r["_cdc_at"])
        for r in pairs.select(*key, *[_old(k) for k in key], "_cdc_at").collect()
    ]
    if not seen:
        return rows
    fills = None
    for _ in range(chain_rounds(seen)):
        source = rows if fills is None else rows.unionByName(fills)
        fills = fill_rows(source, pairs, truncs, columns, key, fill_priority)
    assert fills is not None
    return rows.unionByName(fills)
