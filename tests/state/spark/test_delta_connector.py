"""The state as a user's Spark reads it with Delta Lake's own connector (``spark.jars.packages``, fetched
from Maven Central as a user's Spark fetches it): each version's rows, its history and time travel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_backfill.spark.packages import delta_connector
from tests.support.runs import ingest_and_reconcile, land_snapshot_of
from tests.support.scripts import ENCODERS, records, write_stream_file

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ENC = ENCODERS["debezium-postgresql"]

READ = """
import json, sys
from pyspark.sql import SparkSession
table = sys.argv[1]
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.jars.packages", sys.argv[2])
         .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
         .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
         .getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
now = spark.read.format("delta").load(table)
first = spark.read.format("delta").option("versionAsOf", 0).load(table)
history = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").select("version").collect()
print(json.dumps({
    "now": sorted([r["id"], r["v"]] for r in now.select("id", "v").collect()),
    "first": sorted(r["id"] for r in first.select("id").collect()),
    "versions": sorted(r["version"] for r in history),
}))
"""


def test_spark_delta_connector_reads_every_version_of_the_state(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing, state = tmp_path / "landing", tmp_path / "state"
    script = land_snapshot_of(20, ENC, landing)
    ingest_and_reconcile(spark, landing, state, ENC)  # version 0: keys 1-20
    done = max(n for n, _ in records(script, ENC))
    script.update(7, "changed")
    script.delete(8)
    script.insert(500, "new")
    write_stream_file(landing, "2.jsonl", [r for n, r in records(script, ENC) if n > done])
    ingest_and_reconcile(spark, landing, state, ENC)  # version 1

    res = subprocess.run(
        [sys.executable, "-c", READ, str(state / ENC.collection), delta_connector()],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["versions"] == [0, 1]
    assert got["first"] == list(range(1, 21))
    assert got["now"] == sorted([k, row["v"]] for k, row in script.truth.items())
