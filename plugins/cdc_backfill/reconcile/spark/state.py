"""The state of a collection on disk: Parquet versions and an atomic ``current`` pointer.

``<state>/<collection>/v000007/*.parquet`` holds one complete version; ``current`` is a symbolic link to
the newest complete one, replaced atomically (a new link renamed over the old), so Spark, DuckDB and
pandas reading ``<state>/<collection>/current`` see the previous version or the new one, never a mix. A
run that fails before the switch leaves the previous version current. ``_log.json`` lists the
versions with the stream position each is complete up to; older versions beyond ``keep`` are removed.

Only the job entry point calls :func:`write_version` (it does I/O); the rest is path arithmetic.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from cdc_backfill.files import write_atomically
from cdc_backfill.layout import (
    CARRY_DIR,
    CARRY_ROWS,
    CARRY_SIGNALS,
    CURRENT,
    LOG,
    META_FILE,
    collection_dir,
    current_path,
    read_log,
    versions,
)

__all__ = ["current_path", "read_log", "spark_schema_of", "write_version"]

_SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"


def spark_schema_of(folder: Path) -> T.StructType | None:
    """The schema Spark wrote into a version's Parquet footers, read on the driver: given to the reader,
    it spares the job Spark would otherwise run to infer it. None when there is none to read."""
    import pyarrow.parquet as pq

    part = next(iter(sorted(Path(folder).glob("part-*.parquet"))), None)
    meta = (pq.read_schema(part).metadata or {}) if part is not None else {}
    if _SPARK_SCHEMA_KEY not in meta:
        return None
    return T.StructType.fromJson(json.loads(meta[_SPARK_SCHEMA_KEY]))


def write_version(
    df: DataFrame,
    state: Path,
    collection: str,
    info: dict[str, Any] | Callable[[], dict[str, Any]],
    keep: int = 3,
    carry: tuple[DataFrame, DataFrame] | None = None,
    meta: dict[str, Any] | None = None,
) -> Path:
    """Write ``df`` as the next version (with the run's carry and meta beside it, see
    ``cdc_backfill.reconcile.runs``), switch ``current`` to it, log it with ``info`` (or what
    ``info()`` returns once ``df`` is written: counts observed by the write), prune old versions."""
    folder = collection_dir(state, collection)
    folder.mkdir(parents=True, exist_ok=True)
    number = (versions(folder) or [0])[-1] + 1
    target = folder / f"v{number:06d}"
    if target.exists():  # a run that failed before its switch left it half written: never current
        shutil.rmtree(target)
    df.write.mode("errorifexists").parquet(str(target))
    if carry is not None:
        rows, signals = carry
        rows.write.mode("errorifexists").parquet(str(target / CARRY_DIR / CARRY_ROWS))
        signals.write.mode("errorifexists").parquet(str(target / CARRY_DIR / CARRY_SIGNALS))
    if meta is not None:
        write_atomically(target / META_FILE, json.dumps(meta).encode())
    tmp_link = folder / f".{CURRENT}.{os.getpid()}"
    if tmp_link.is_symlink():
        tmp_link.unlink()
    os.symlink(target.name, tmp_link)
    os.replace(tmp_link, folder / CURRENT)  # the switch: atomic
    counts = info() if callable(info) else info
    log = [*read_log(folder), {"version": number, "written_at": time.time(), **counts}]
    write_atomically(folder / LOG, json.dumps(log, indent=2, default=str).encode())
    for old in versions(folder)[:-keep]:
        shutil.rmtree(folder / f"v{old:06d}", ignore_errors=True)
    return target
