"""The connectors a job is given by Maven coordinates (``spark.packages``), as data: Spark's s3a connector
only where a location is on S3, of the Hadoop release inside pyspark, and the user's choice over ours."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_backfill.spark.packages import (
    S3_PACKAGES_ENV,
    for_lake,
    hadoop_version,
    job_packages,
    kafka_source,
    unresolved,
    unsupported_spark,
)
from cdc_backfill.spark.submit import capture_kafka_command, ingest_command, reconcile_command
from tests.support.s3 import upload


def test_the_s3a_connector_is_asked_for_only_where_the_lake_is_on_s3() -> None:
    assert for_lake(["lake", "/data/state"], {}).coordinates == ()
    pk = for_lake(["lake", "s3://bucket/state"], {})
    hadoop = hadoop_version()
    assert pk.coordinates[0] == f"org.apache.hadoop:hadoop-aws:{hadoop}"  # the client pyspark carries
    if hadoop == "3.5.0":  # the SDK modules it loads, not the 686 MB bundle
        assert pk.excludes == ("software.amazon.awssdk:bundle",)
        assert "software.amazon.awssdk:s3:2.35.4" in pk.coordinates
    assert for_lake(["s3a://bucket/lake"], {}).coordinates == pk.coordinates


def test_a_platform_that_has_the_connector_or_other_coordinates_win() -> None:
    assert for_lake(["s3://b/l"], {S3_PACKAGES_ENV: "provided"}).args() == []
    mine = for_lake(["s3://b/l"], {S3_PACKAGES_ENV: "org.apache.hadoop:hadoop-aws:3.4.1"})
    assert mine.args() == ["--packages", "org.apache.hadoop:hadoop-aws:3.4.1"]


def test_every_job_command_carries_what_its_locations_need() -> None:
    local = reconcile_command("lake", "state")
    assert "--packages" not in local
    on_s3 = reconcile_command("s3://b/lake", "s3://b/state", kafka=("k:9092", "t.*"))
    packages = on_s3[on_s3.index("--packages") + 1].split(",")
    assert packages[0] == kafka_source() and any("hadoop-aws" in p for p in packages)
    assert on_s3.index("--packages") < next(i for i, a in enumerate(on_s3) if a.endswith(".py"))
    assert "--packages" in ingest_command("s3://b/lake") and "--packages" not in ingest_command("lake")
    kafka_only = capture_kafka_command("lake", "k:9092", "t.*")
    assert kafka_only[kafka_only.index("--packages") + 1] == kafka_source()
    assert job_packages(["lake"], kafka=False).conf() == {}


def test_a_package_ivy_could_not_fetch_is_named_in_one_line() -> None:
    line = "Exception in thread main java.lang.RuntimeException: [unresolved dependency: org.apache.hadoop#hadoop-aws;0.0.1: not found]"
    said = unresolved(line)
    assert said is not None and "\n" not in said
    assert "org.apache.hadoop:hadoop-aws:0.0.1" in said and S3_PACKAGES_ENV in said
    assert unresolved(":: resolving dependencies :: org.apache.spark#spark-submit-parent") is None


@pytest.mark.slow
def test_a_connector_spark_cannot_fetch_is_refused_in_one_line(s3_lake, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """As a user meets it: a release Maven Central does not have (or no network), a command over S3."""
    (tmp_path / "landing" / "stream").mkdir(parents=True)
    (tmp_path / "landing" / "stream" / "1.jsonl").write_text("{}\n")
    upload(tmp_path / "landing", s3_lake / "landing")
    env = {**os.environ, S3_PACKAGES_ENV: "org.apache.hadoop:hadoop-aws:0.0.1"}
    res = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "ingest", "--landing", f"{s3_lake}/landing"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode != 0
    assert res.stderr.strip().splitlines()[-1] == unresolved(
        "[unresolved dependency: org.apache.hadoop#hadoop-aws;0.0.1: not found]"
    ), res.stderr[-3000:]
    assert "Exception" not in res.stderr and "\tat " not in res.stderr, res.stderr[-3000:]


def test_a_spark_outside_the_supported_lines_is_refused_in_one_line() -> None:
    assert unsupported_spark("4.0.0") is None and unsupported_spark("4.2.0") is None
    for outside in ("3.5.1", "4.3.0", "5.0.0.dev1"):
        said = unsupported_spark(outside)
        assert said is not None and "\n" not in said and "pip install 'pyspark>=4.0,<4.3'" in said, outside
    assert unsupported_spark() is None  # the one installed here
