"""A class-data archive for Spark's driver JVM (Java's AppCDS), so that every command that starts Spark
starts it sooner.

A driver JVM loads and verifies some 15,000 classes of Spark, Scala and Hadoop before the first job:
most of a short command's time (a `verify`, a small `reconcile`, each Airflow task). Java can dump the
classes one run loaded into an archive and map it into later JVMs, which then start sooner
(docs/benchmarks.md, "Measured choices").

The archive belongs to one Java and one set of Spark jars: it is named by both and kept beside the
virtual environment (``make venv`` builds it; ``python -m cdc_backfill.spark.classes`` builds it
anywhere). A JVM that finds an archive it cannot use runs without it, silently (``-Xshare:auto`` with
the class-data log off), so a stale one costs nothing but the speed-up. ``CDC_BACKFILL_SPARK_CLASSES=off``
turns it off. Pure but for the build: no pyspark import at the top.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import subprocess
import sys
import time
from pathlib import Path

ARCHIVE_ENV = "CDC_BACKFILL_SPARK_CLASSES"  # "off", or the archive's path
# a mismatched archive is skipped with warnings on stdout, where spark-submit's output is read
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"

# What the archive is made from: a session that runs the kinds of jobs the commands run (Parquet
# written and read, joins, aggregates, windows, collects), so that their classes are in it.
WORKLOAD = """
import sys, tempfile
from cdc_backfill.spark.session import build_session
from pyspark.sql import Window, functions as F
spark = build_session("cdc_backfill-classes", conf={"spark.driver.extraJavaOptions": sys.argv[1]})
with tempfile.TemporaryDirectory() as d:
    df = spark.range(2000).select(F.col("id"), (F.col("id") % 7).alias("k"), F.sha2(F.col("id").cast("string"), 256).alias("h"))
    df.write.option("compression", "zstd").parquet(d + "/t")
    back = spark.read.parquet(d + "/t")
    w = Window.partitionBy("k").orderBy(F.col("id").desc())
    ranked = back.withColumn("n", F.row_number().over(w)).where("n = 1")
    joined = ranked.join(F.broadcast(back.select("k").distinct()), "k", "left").join(back, "id", "left_anti")
    joined.groupBy("k").agg(F.max_by("h", "id"), F.count_if(F.col("id") > 3), F.sum("id")).collect()
    spark.createDataFrame([(1, "a", b"x")], "a int, b string, c binary").toPandas()
spark.stop()
"""


def archive_path() -> Path | None:
    """Where the archive for this Java and these Spark jars is (whether it exists or not); None when
    turned off or Spark is not installed."""
    from cdc_backfill.runtime import find_java

    chosen = os.environ.get(ARCHIVE_ENV, "")
    if chosen.lower() == "off":
        return None
    if chosen:
        return Path(chosen)
    try:
        spark = importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return None
    java = find_java()
    if java.home is None:
        return None
    tag = hashlib.sha256(f"{java.home.resolve()}|{java.major}".encode()).hexdigest()[:10]
    return Path(sys.prefix) / "share" / "cdc_backfill" / f"spark-{spark}-java{java.major}-{tag}.jsa"


def archive_options() -> str:
    """The driver JVM's options to map the archive, or nothing when there is none."""
    path = archive_path()
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path} {QUIET}"


def build(path: Path, timeout: float = 600) -> str:
    """Dump the archive at ``path`` from one run of :data:`WORKLOAD` (written whole: a temporary name,
    then renamed); what happened, in one line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    env = {**os.environ, ARCHIVE_ENV: "off"}  # the dumping JVM maps no earlier archive
    started = time.monotonic()
    try:
        res = subprocess.run(
            [sys.executable, "-c", WORKLOAD, f"-XX:ArchiveClassesAtExit={tmp} {QUIET}"],
            env=env, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        tmp.unlink(missing_ok=True)
        return f"Spark's class archive: not built (no run within {timeout:.0f} s); Spark starts without it"
    if res.returncode != 0 or not tmp.is_file():
        tmp.unlink(missing_ok=True)
        last = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
        return f"Spark's class archive: not built ({last}); Spark starts without it"
    os.replace(tmp, path)
    return f"Spark's class archive: {path} ({time.monotonic() - started:.0f} s)"


def main(argv: list[str] | None = None) -> int:
    """``python -m cdc_backfill.spark.classes [--force]``: build the archive unless it exists. Always
    exits 0: Spark runs without it, only slower to start."""
    args = sys.argv[1:] if argv is None else argv
    from cdc_backfill.runtime import apply_defaults

    apply_defaults()
    path = archive_path()
    if path is None:
        print("Spark's class archive: off (or no Spark and Java to build it for)")
    elif path.is_file() and "--force" not in args:
        print(f"Spark's class archive: {path}")
    else:
        print(build(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
