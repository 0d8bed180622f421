"""Shared by the verify tests: a state made by the real snapshot engine, and verify run in-process."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdc_backfill.reconcile.columns import collection_columns
from cdc_backfill.signals.model import Signal
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.snapshot.engine import SnapshotEngine
from cdc_backfill.spark.column_types import spark_type
from cdc_backfill.spark.verify import range_stats
from cdc_backfill.verify.compare import RangeStats, Report, compare
from cdc_backfill.verify.source import read_source


def snapshot_state(spark: SparkSession, url: str, landing: Path, *collections: str) -> dict[str, DataFrame]:
    """Each collection read by the snapshot engine and typed as the reconcile types READ rows (no stream:
    nothing changes meanwhile), plus internal columns that verify must ignore."""
    store = SignalStore(url)
    store.init()
    store.send(
        Signal(f"sig-{len(store.rows())}", "execute-snapshot", collections, "incremental", chunk_size=50)
    )
    store.engine.dispose()
    SnapshotEngine(url, landing, readers=1).run()
    out = {}
    for coll in collections:
        columns, _ = collection_columns(landing, coll)
        chunks = spark.read.parquet(str(landing / "snapshots" / coll))
        out[coll] = chunks.select(
            *[F.col(f"`{c.name}`").cast(spark_type(c)).alias(c.name) for c in columns],
            F.struct(F.lit(1).alias("a")).alias("_cdc_position"),
            F.lit("anything").alias("_cdc_future_column"),
        )
    return out


def verify(url: str, collection: str, state: DataFrame, ranges: int = 16) -> Report:
    engine = sa.create_engine(url)
    try:
        source = read_source(engine, collection, ranges)
    finally:
        engine.dispose()
    rows = range_stats(state, source.table.columns, source.table.key, source.ranges).collect()
    stats = {int(r["_cdc_r"]): RangeStats(int(r["_cdc_rows"]), int(r["_cdc_hash"])) for r in rows}
    return compare(collection, [c.name for c in source.table.key], source.ranges, source.stats, stats)


def range_of(report: Report, contains) -> int:  # type: ignore[no-untyped-def]
    """The index of the range whose bounds (as Python values, by ``contains(lo, hi)``) hold a key."""
    hits = [
        r.range.index
        for r in report.results
        if contains(r.range.lo.sql if r.range.lo else None, r.range.hi.sql if r.range.hi else None)
    ]
    assert len(hits) == 1, hits
    return hits[0]
