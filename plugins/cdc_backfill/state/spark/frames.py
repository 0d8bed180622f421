"""A state version as a DataFrame, and a DataFrame committed as the next version (docs/design.md §6.1).

Spark reads exactly the files the Delta log names (reading the table's folder would also read files a
later version removed, and those of a run that failed before its commit), with the table's schema, so
it runs no job to infer one. Spark writes the next version's files into a folder of their own; the
driver commits them (``cdc_backfill.state.table``). Only entry points call :func:`write_version`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from cdc_backfill.faults import RECONCILE_CRASH_ENV, crash_point
from cdc_backfill.landing.layout import CARRY_ROWS, CARRY_SIGNALS
from cdc_backfill.spark.driver_frames import empty_frame, parquet_files
from cdc_backfill.state.table import StateTable, StateVersion

# Parquet timestamps as Delta's own writers store them (Spark's default, INT96, is deprecated in Parquet)
TIMESTAMPS = ("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")


def version_schema(version: StateVersion) -> T.StructType:
    return T.StructType.fromJson(json.loads(version.schema_json))


def read_version(spark: SparkSession, version: StateVersion) -> DataFrame:
    """The rows of one version: the files its log names, with the table's schema."""
    schema = version_schema(version)
    if not version.files:
        return empty_frame(spark, schema)
    return parquet_files(spark, list(version.files), schema)


def write_version(
    df: DataFrame,
    state: Path,
    collection: str,
    read: StateVersion | None,
    info: dict[str, Any] | Callable[[], dict[str, Any]],
    carry: tuple[DataFrame, DataFrame] | None = None,
    meta: dict[str, Any] | None = None,
    replaced: Sequence[str] | None = None,
    removed: DataFrame | None = None,
) -> int:
    """Write ``df`` (and the run's carry, and the removals it remembers where they changed) and commit it
    as the version after ``read``, with ``meta`` (what it consumed) and ``info`` (or what ``info()`` returns once ``df`` is written: counts observed by the
    write) in the commit. Returns the new version's number; StateError if another run committed first."""
    table = StateTable(state, collection)
    files_dir = table.new_files_dir(read)
    spark = df.sparkSession
    spark.conf.set(*TIMESTAMPS)
    # one file per partition: the merge's shuffle by key, so each file holds a set of key hashes, and a
    # run that changes k keys rewrites at most k files (reconcile.spark.runs.touched_part)
    df.write.mode("errorifexists").parquet(str(files_dir))
    if carry is not None:
        rows, signals = carry
        rows.write.mode("errorifexists").parquet(str(table.carry_dir(files_dir) / CARRY_ROWS))
        signals.write.mode("errorifexists").parquet(str(table.carry_dir(files_dir) / CARRY_SIGNALS))
    meta = dict(meta or {})
    if removed is not None:
        removed.write.mode("errorifexists").parquet(str(table.removed_dir(files_dir)))
        meta["removed"] = files_dir.name
    counts = info() if callable(info) else info
    crash_point(RECONCILE_CRASH_ENV, "before-commit")  # the files written, no version names them yet
    schema = df.schema.json()
    return table.commit(files_dir, schema, read, meta, counts, replaced=replaced, carry=carry is not None)
