"""The Maven coordinates of Spark connectors a job needs, for the Spark the project runs on (pure; reads
pyspark's version from its installed metadata, without importing it). Spark fetches them itself
(``spark.jars.packages``, ``--packages``) from Maven Central into its Ivy cache, as a user's Spark does.
"""

from __future__ import annotations

from importlib.metadata import version

SCALA = "2.13"


def spark_version() -> str:
    return version("pyspark")


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
