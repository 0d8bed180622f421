"""The Maven coordinates of Spark connectors a job needs, for the Spark the project runs on (pure; reads
pyspark's version from its installed metadata, without importing it). Spark fetches them itself
(``spark.jars.packages``, ``--packages``) from Maven Central into its Ivy cache, as a user's Spark does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import version

SCALA = "2.13"


# The Spark lines the product runs on (pyproject.toml's pyspark range): the oldest, tested in CI beside
# the pinned one, and the newest.
OLDEST_LINE, NEWEST_LINE = (4, 0), (4, 2)


def spark_version() -> str:
    return version("pyspark")


def unsupported_spark(installed: str | None = None) -> str | None:
    """Why the installed pyspark (or ``installed``) is outside the supported lines, in one line; None
    when it is inside."""
    text = installed or spark_version()
    line = tuple(int(part) for part in re.findall(r"\d+", text)[:2])
    if OLDEST_LINE <= line <= NEWEST_LINE:
        return None
    low, high = ".".join(map(str, OLDEST_LINE)), ".".join(map(str, NEWEST_LINE))
    return (
        f"pyspark {text} is outside the Spark lines cdc-backfill runs on ({low} to {high}): "
        f"pip install 'pyspark>={low},<{NEWEST_LINE[0]}.{NEWEST_LINE[1] + 1}'"
    )


def kafka_source() -> str:
    """Spark's Kafka source of this Spark's version (``spark-sql-kafka-0-10``): Spark's lines are not
    meant to be mixed, and the version must be one Maven Central serves (4.2.0 is; 4.3.0 is not)."""
    return f"org.apache.spark:spark-sql-kafka-0-10_{SCALA}:{spark_version()}"


# Delta Lake's connector for Spark, the release Maven Central serves for this Spark line (its artifact
# names the line: delta-spark_4.2_2.13)
DELTA_SPARK = "4.4.0"


def delta_connector() -> str:
    """Spark's own Delta connector for this Spark's line, which reads the state's tables (history and
    time travel included) where a user's Spark reads them, not this project's jobs (delta-rs commits)."""
    line = ".".join(spark_version().split(".")[:2])
    return f"io.delta:delta-spark_{line}_{SCALA}:{DELTA_SPARK}"


# Where a location is on S3, Spark reaches it through Hadoop's s3a connector (hadoop-aws), which pyspark
# does not carry: it is asked for by its Maven coordinates, the release of the Hadoop client inside this
# pyspark (Hadoop's parts are not meant to be mixed). A cluster that has it already (EMR, Dataproc,
# Databricks) says so: CDC_BACKFILL_S3_PACKAGES=provided; other coordinates there replace ours.
S3_PACKAGES_ENV = "CDC_BACKFILL_S3_PACKAGES"
PROVIDED = "provided"
# hadoop-aws depends on the AWS SDK's 686 MB bundle; the SDK modules s3a loads are a fraction of it
# (docs/benchmarks.md), for each Hadoop release whose SDK release was measured here.
S3_SDK_MODULES = ("s3", "s3-transfer-manager", "sts")
_SDK_OF_HADOOP = {"3.5.0": "2.35.4"}


def hadoop_version() -> str | None:
    """The release of the Hadoop client inside this pyspark, from its jars' names."""
    from cdc_backfill.runtime import spark_home

    home = spark_home()
    for jar in sorted((home / "jars").glob("hadoop-client-api-*.jar")) if home else ():
        return jar.stem.removeprefix("hadoop-client-api-")
    return None


@dataclass(frozen=True)
class Packages:
    """Maven coordinates for ``spark.jars.packages`` and group:artifact pairs for ``spark.jars.excludes``."""

    coordinates: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()

    def __add__(self, other: Packages) -> Packages:
        return Packages(self.coordinates + other.coordinates, self.excludes + other.excludes)

    def conf(self) -> dict[str, str]:
        """As a session's settings."""
        out = {"spark.jars.packages": ",".join(self.coordinates)} if self.coordinates else {}
        if self.excludes:
            out["spark.jars.excludes"] = ",".join(self.excludes)
        return out

    def args(self) -> list[str]:
        """As spark-submit's options."""
        out = ["--packages", ",".join(self.coordinates)] if self.coordinates else []
        return out + (["--exclude-packages", ",".join(self.excludes)] if self.excludes else [])


def s3_connector(environ: Mapping[str, str] | None = None) -> Packages:
    """Spark's s3a connector for this pyspark: ``CDC_BACKFILL_S3_PACKAGES`` (coordinates, or ``provided``)
    or hadoop-aws of the Hadoop client's release with the SDK modules it loads in place of the bundle
    (where that release's SDK was measured; else hadoop-aws as Maven Central describes it)."""
    env = os.environ if environ is None else environ
    chosen = env.get(S3_PACKAGES_ENV, "").strip()
    if chosen == PROVIDED:
        return Packages()
    if chosen:
        return Packages(tuple(c.strip() for c in chosen.split(",") if c.strip()))
    hadoop = hadoop_version()
    if hadoop is None:
        raise ConnectorError(
            f"cannot tell which Hadoop this pyspark carries (no jars/hadoop-client-api-*.jar): set {S3_PACKAGES_ENV}"
            " to the Maven coordinates of its hadoop-aws, or to provided where the cluster has it"
        )
    sdk = _SDK_OF_HADOOP.get(hadoop)
    if sdk is None:
        return Packages((f"org.apache.hadoop:hadoop-aws:{hadoop}",))
    modules = tuple(f"software.amazon.awssdk:{m}:{sdk}" for m in S3_SDK_MODULES)
    return Packages((f"org.apache.hadoop:hadoop-aws:{hadoop}", *modules), ("software.amazon.awssdk:bundle",))


def for_lake(locations: Sequence[str | object], environ: Mapping[str, str] | None = None) -> Packages:
    """The connectors a job over ``locations`` (landing, state, ...) needs: the s3a connector where one
    of them is on S3, nothing else."""
    on_s3 = any(str(loc).lower().startswith(("s3://", "s3a://")) for loc in locations if loc is not None)
    return s3_connector(environ) if on_s3 else Packages()


def job_packages(locations: Sequence[str | object], kafka: bool = False) -> Packages:
    """Every connector a job needs: Spark's Kafka source where it reads topics, the s3a connector where
    one of ``locations`` is on S3. Every job and session asks for them: a pyspark outside the supported
    lines is refused here, before any work (ConnectorError)."""
    wrong = unsupported_spark()
    if wrong:
        raise ConnectorError(wrong)
    return (Packages((kafka_source(),)) if kafka else Packages()) + for_lake(locations)


class ConnectorError(RuntimeError):
    """A connector Spark cannot be given; the message names the setting."""


def unresolved(line: str) -> str | None:
    """The one line to say when spark-submit's Ivy output ``line`` reports a package it could not fetch
    (None for any other line)."""
    found = _UNRESOLVED.search(line)
    if found is None:
        return None
    package = re.sub(r"[#;]", ":", found.group(1))
    s3 = any(part in package for part in ("hadoop-aws", "awssdk"))
    where = (
        f", or set {S3_PACKAGES_ENV}=provided where the cluster has the S3 connector, or other Maven coordinates"
        if s3
        else ""
    )
    return (
        f"Spark could not fetch {package} (Maven Central unreachable, or no such release): give Spark a "
        f"repository it reaches (spark.jars.repositories){where}"
    )


_UNRESOLVED = re.compile(r"unresolved dependency: ([\w.\-]+[#:][\w.\-]+[;:][\w.\-]+)")
