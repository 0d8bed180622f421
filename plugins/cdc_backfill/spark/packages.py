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
