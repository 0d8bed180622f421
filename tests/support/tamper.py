"""Shared by the verify and Airflow tests: a state made by the real snapshot engine, verify run in-process, and rows of a state changed by hand."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import sqlalchemy as sa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdc_backfill.files import write_parquet
from cdc_backfill.lakepath import parquet_metadata, read_parquet
from cdc_backfill.landing.columns import collection_columns
from cdc_backfill.signals.model import Signal
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.snapshot.engine import SnapshotEngine
from cdc_backfill.spark.column_types import spark_type
from cdc_backfill.verify.compare import RangeStats, Report, compare
from cdc_backfill.verify.source_side import read_source
from cdc_backfill.verify.spark.range_stats import range_stats
from tests.support.state import state_files, state_table


def snapshot_state(spark: SparkSession, url: str, landing: Path, *collections: str) -> dict[str, DataFrame]:
    """Each collection read by the snapshot engine and typed as the reconcile types READ rows (no stream:
    nothing changes meanwhile), plus internal columns that verify must ignore."""
    store = SignalStore(url)
    store.init()
    store.send(
        Signal(f"sig-{len(store.rows())}", "execute-snapshot", collections, "incremental", chunk_size=50)
    )
    store.sa_engine.dispose()
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


def corrupt_one_row(
    state: Path, collection: str, victim: int | None = None, status: str | None = None, column: str = "status"
) -> int:
    """Change one non-key value of one row (``victim``'s, else one in the middle of a file) in the
    current Parquet of the state, by hand (its ``column``: ``status``, else the old value marked); return
    its id."""
    parts = [p for p in sorted(state_files(state, collection)) if parquet_metadata(p).num_rows > 0]
    if victim is not None:
        part = next(p for p in parts if victim in read_parquet(p, columns=["id"]).column("id").to_pylist())
        row = read_parquet(part, columns=["id"]).column("id").to_pylist().index(victim)
    else:
        part = parts[0]
        row = parquet_metadata(part).num_rows // 2
    table = read_parquet(part)
    victim = table.column("id")[row].as_py()
    status_to = status
    status = table.column(column).to_pylist()
    status[row] = status[row] + "-corrupted" if status_to is None else status_to
    table = table.set_column(table.schema.get_field_index(column), column, pa.array(status, pa.string()))
    write_parquet(part, table)
    (part.parent / f".{part.name}.crc").unlink(missing_ok=True)  # Spark's checksum of the old bytes
    assert pc.sum(pc.equal(state_table(state, collection).column("id"), victim)).as_py() == 1
    return int(victim)


def add_phantom(state: Path, collection: str, url: str) -> int:
    """Put a row the source does not have into the state, by hand (a delete the stream lost): a copy of
    a row under a free key, at that row's position; return its id."""
    import sqlalchemy as sa

    part = next(p for p in sorted(state_files(state, collection)) if parquet_metadata(p).num_rows > 1)
    table = read_parquet(part)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        taken = {r[0] for r in conn.exec_driver_sql("SELECT id FROM orders")}
    engine.dispose()
    first = table.column("id")[0].as_py()
    ghost = next(
        i
        for i in range(first + 1, first + 10_000)
        if i not in taken and i not in table.column("id").to_pylist()
    )
    row = table.slice(0, 1).set_column(
        table.schema.get_field_index("id"), "id", pa.array([ghost], table.schema.field("id").type)
    )
    write_parquet(part, pa.concat_tables([table, row]))
    (part.parent / f".{part.name}.crc").unlink(missing_ok=True)
    return ghost
