from __future__ import annotations

import os
import sys

import pytest

from cdc_backfill.spark.session import LOCAL_CONF, session_conf, shuffle_partitions, size_shuffle

pytestmark = pytest.mark.spark


def test_local_sessions_get_small_machine_defaults() -> None:
    assert (
        session_conf("local[2]")["spark.sql.shuffle.partitions"] == LOCAL_CONF["spark.sql.shuffle.partitions"]
    )
    assert (
        session_conf("local[*]", {"spark.sql.shuffle.partitions": "16"})["spark.sql.shuffle.partitions"]
        == "16"
    )
    # a cluster keeps its own defaults; every session reaches S3 through s3a (cdc_backfill.storage)
    cluster = session_conf("spark://master:7077")
    assert not set(cluster) & set(LOCAL_CONF)
    assert cluster["spark.sql.session.timeZone"] == "UTC"  # positions and timestamps: UTC on a cluster too
    assert cluster["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"


def test_session_runs_a_job_in_utc(spark) -> None:  # type: ignore[no-untyped-def]
    assert spark.version.startswith("4.")
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    total = spark.range(10_000).selectExpr("sum(id) AS s").collect()[0]["s"]
    assert total == 49_995_000


def test_python_workers_run_the_projects_interpreter(spark) -> None:  # type: ignore[no-untyped-def]
    """A Python UDF starts worker processes: they must be this venv's Python (PYSPARK_PYTHON)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    exe = F.udf(lambda _: sys.executable, StringType())
    seen = {r[0] for r in spark.range(4).select(exe("id")).distinct().collect()}
    assert seen == {os.environ["PYSPARK_PYTHON"]}


def test_shuffle_partitions_follow_the_run_size() -> None:
    assert shuffle_partitions(0) == shuffle_partitions(1_000) == 8
    assert shuffle_partitions(10_000_000) == 66
    assert shuffle_partitions(10**9) == 200


def test_a_local_reconcile_sizes_the_shuffle_unless_the_user_chose(spark) -> None:  # type: ignore[no-untyped-def]
    key = "spark.sql.shuffle.partitions"
    before = spark.conf.get(key)
    try:
        spark.conf.set(key, LOCAL_CONF[key])
        size_shuffle(spark, 1_000)
        assert spark.conf.get(key) == "8"
        size_shuffle(spark, 10_000_000)  # sized again: the value is its own
        assert spark.conf.get(key) == "66"
        spark.conf.unset("spark.cdc_backfill.shuffleSized")
        spark.conf.set(key, "3")  # the user's
        size_shuffle(spark, 10_000_000)
        assert spark.conf.get(key) == "3"
    finally:
        spark.conf.set(key, before)
