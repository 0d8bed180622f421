"""Parsing Debezium PostgreSQL events from JSON lines: pure Python and Spark local[2], each next to
a reference measured in the same run on the same files.

References: for pure Python, ``orjson.loads`` of every line and nothing else (the floor of any
Python parser); for Spark, Spark's own JSON reader parsing the same lines with a fixed schema (native
JVM parsing, no positions, no quarantine, no semantic types).

    python -m bench.parse_events --events 1000000
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import orjson

from bench.common import report, timed
from cdc_backfill.events import parse_file

FILE_EVENTS = 100_000


def make_landing(folder: Path, n: int) -> int:
    """n Debezium PostgreSQL change events (creates, updates, deletes) in files of 100k lines."""
    written = 0
    lsn = 100_000_000
    for f in range((n + FILE_EVENTS - 1) // FILE_EVENTS):
        lines = []
        for i in range(f * FILE_EVENTS, min(n, (f + 1) * FILE_EVENTS)):
            op = "cud"[i % 3]
            lsn += 56
            row = {
                "id": i,
                "name": f"customer {i}",
                "email": f"c{i}@example.org",
                "balance": i * 7 % 10000,
                "active": True,
            }
            value = {
                "before": {"id": i} if op != "c" else None,
                "after": None if op == "d" else row,
                "source": {"version": "2.7.0.Final", "connector": "postgresql", "name": "pg", "ts_ms": 1700000000000 + i,
                           "snapshot": "false", "db": "app", "sequence": json.dumps([str(lsn - 56), str(lsn)]),
                           "schema": "public", "table": "customers", "txId": 1000 + i, "lsn": lsn, "xmin": None},
                "op": op, "ts_ms": 1700000000000 + i, "transaction": None,
            }  # fmt: skip
            lines.append(orjson.dumps({"key": {"id": i}, "value": value}))
        (folder / f"part-{f:05d}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
        written += len(lines)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="cdc-bench-parse-"))
    try:
        n = make_landing(folder, args.events)
        files = sorted(folder.glob("*.jsonl"))
        size_mb = sum(f.stat().st_size for f in files) / 1e6

        def orjson_floor() -> int:
            count = 0
            for f in files:
                for line in f.read_bytes().splitlines():
                    orjson.loads(line)
                    count += 1
            return count

        def pure_python() -> int:
            return sum(len(parse_file(str(f)).events) for f in files)

        t_floor, c_floor = timed(orjson_floor)
        t_py, c_py = timed(pure_python)
        assert c_floor == c_py == n

        from pyspark.sql.types import LongType, StringType, StructField, StructType

        from cdc_backfill.ingest.spark.parse import events_only, landing_events
        from cdc_backfill.spark.session import build_session

        t_start, spark = timed(lambda: build_session("bench_parse", master=args.master))
        # Warm-up on one file so JIT and worker start-up are not billed to either side.
        events_only(landing_events(spark, str(files[0]))).write.format("noop").mode("overwrite").save()
        t_spark, _ = timed(
            lambda: (
                events_only(landing_events(spark, str(folder))).write.format("noop").mode("overwrite").save()
            )
        )
        c_spark = events_only(landing_events(spark, str(folder))).count()
        assert c_spark == n, c_spark
        native_schema = StructType([
            StructField("key", StructType([StructField("id", LongType())])),
            StructField("value", StructType([
                StructField("op", StringType()),
                StructField("after", StringType()),
                StructField("before", StringType()),
                StructField("source", StructType([StructField("lsn", LongType()), StructField("sequence", StringType())])),
            ])),
        ])  # fmt: skip
        t_native, _ = timed(
            lambda: (
                spark.read.schema(native_schema)
                .json(str(folder))
                .write.format("noop")
                .mode("overwrite")
                .save()
            )
        )
        spark.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    rows = [
        {"measure": "pure Python: cdc_backfill parser", "items": n, "seconds": t_py, "rate": n / t_py,
         "reference": f"{t_floor / t_py:.2f} of orjson.loads alone",
         "reference_name": "orjson.loads alone", "reference_seconds": t_floor},
        {"measure": "  reference: orjson.loads of each line only", "items": n, "seconds": t_floor, "rate": n / t_floor},
        {"measure": f"Spark {args.master}: canonical DataFrame", "items": n, "seconds": t_spark, "rate": n / t_spark,
         "reference": f"{t_native / t_spark:.2f} of Spark's native JSON reader",
         "reference_name": "spark.read.json", "reference_seconds": t_native},
        {"measure": "  reference: spark.read.json, fixed schema", "items": n, "seconds": t_native, "rate": n / t_native},
    ]  # fmt: skip
    report(
        "parse_events",
        rows,
        {"events": n, "megabytes": round(size_mb, 1), "spark_session_start_s": round(t_start, 1)},
    )
    print(f"({size_mb:.0f} MB of JSON lines; Spark session start {t_start:.1f}s, not counted)")


if __name__ == "__main__":
    main()
