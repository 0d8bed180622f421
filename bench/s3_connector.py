"""What a user downloads for Spark's s3a connector, and whether it works: hadoop-aws with the AWS SDK's
bundle (the reference: hadoop-aws as Maven Central describes it) against hadoop-aws with the SDK's
modules s3a loads (what the product asks for, ``spark.packages.s3_connector``), in one run.

Each variant starts a session with a fresh Ivy folder (so every jar is fetched from Maven Central),
then writes and reads back a Parquet file on ``s3a://`` and ``s3://`` against moto's S3 server run as
a process on 127.0.0.1. Printed: the session's start (the fetch included), the jars' megabytes and
whether the round trip worked.

    python -m bench.s3_connector
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.common import report

VARIANT = r"""
import json, os, sys, time
from pathlib import Path
from cdc_backfill.storage import spark_conf
from pyspark.sql import SparkSession
packages, excludes, ivy, bucket = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4]
t0 = time.perf_counter()
b = SparkSession.builder.master("local[2]").config("spark.jars.packages", packages)
b = b.config("spark.jars.ivy", str(ivy))
if excludes:
    b = b.config("spark.jars.excludes", excludes)
for k, v in spark_conf().items():
    b = b.config(k, v)
spark = b.getOrCreate()
started = time.perf_counter() - t0
jars = list((ivy / "jars").glob("*.jar"))
spark.range(1000).write.mode("overwrite").parquet(f"s3a://{bucket}/x")
ok = spark.read.parquet(f"s3://{bucket}/x").count() == 1000
print(json.dumps({"seconds": started, "mb": sum(j.stat().st_size for j in jars) / 1e6, "jars": len(jars), "ok": ok}))
"""


def main() -> None:
    from cdc_backfill.spark.packages import hadoop_version, s3_connector
    from tests.support.s3 import S3Server

    ours = s3_connector({})
    hadoop = hadoop_version()
    variants = {
        f"hadoop-aws {hadoop} with the SDK bundle": (f"org.apache.hadoop:hadoop-aws:{hadoop}", ""),
        f"hadoop-aws {hadoop} with the SDK's modules": (",".join(ours.coordinates), ",".join(ours.excludes)),
    }
    with tempfile.TemporaryDirectory(prefix="bench-s3-connector-") as tmp:
        server = S3Server(Path(tmp) / "moto.log").start()
        try:
            env = {**os.environ, **server.env}
            results = {}
            for i, (name, (packages, excludes)) in enumerate(variants.items()):
                out = subprocess.run(
                    [sys.executable, "-c", VARIANT, packages, excludes, f"{tmp}/ivy{i}", server.new_bucket()],
                    env=env, capture_output=True, text=True, timeout=1800,
                )  # fmt: skip
                if out.returncode != 0:
                    results[name] = {"seconds": 0.0, "mb": 0.0, "jars": 0, "ok": False}
                    print(f"{name}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
                    continue
                results[name] = json.loads(out.stdout.strip().splitlines()[-1])
        finally:
            server.stop()
    reference = next(iter(results.values()))
    rows = []
    for name, r in results.items():
        ratio = f"{r['mb'] / reference['mb']:.3f}x the bundle's MB" if reference["mb"] else ""
        rows.append({"measure": f"{name}: session start, fetch included", "items": int(r["mb"]),
                     "seconds": r["seconds"], "rate": r["mb"] / r["seconds"] if r["seconds"] else 0,
                     "reference": f"{r['jars']} jars, {r['mb']:.1f} MB, round trip {'ok' if r['ok'] else 'FAILED'}; {ratio}"})  # fmt: skip
    report("s3_connector", rows, {"hadoop": hadoop, "results": results})


if __name__ == "__main__":
    main()
