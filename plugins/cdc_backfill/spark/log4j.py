"""Spark's own (JVM) logging: warnings only, unless the user asks for detail; and the driver JVM's
options, which carry it (pure; no pyspark import).

Spark's default log4j2 profile logs at INFO to stderr: hundreds of ``INFO BlockManager ...`` lines per
job, before the job's one summary line. Every entry point that starts a JVM (the session builder, the
spark-submit command lines) points log4j2 at ``log4j2-quiet.properties`` beside this module instead;
``-v`` leaves Spark's default.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# Spark's log at WARN on stderr, shipped with the package (the default profile logs INFO)
QUIET_LOG4J2 = Path(__file__).with_name("log4j2-quiet.properties")


SPARK_LOG_LEVEL_ENV = "CDC_BACKFILL_SPARK_LOG_LEVEL"  # WARN by default; `-v` sets INFO
_DETAILED = {"INFO", "DEBUG", "TRACE", "ALL"}


def spark_log_level() -> str:
    return os.environ.get(SPARK_LOG_LEVEL_ENV, "WARN").upper()


# the driver JVM's options in place of the project's collector: each entry point sets the driver's
# options itself (spark-submit's --driver-java-options replaces spark.driver.extraJavaOptions of
# spark-defaults.conf), so this is where heap, GC or JIT flags go
DRIVER_JAVA_OPTIONS_ENV = "CDC_BACKFILL_DRIVER_JAVA_OPTIONS"


# the JIT's first compiler only: a short job starts sooner with less CPU (``reconcile.run_size``)
FIRST_COMPILER_ONLY = "-XX:TieredStopAtLevel=1"

# The throughput collector, not G1 (Java's default): a job's driver is a batch, and in local mode its
# executor too, whose tasks G1's concurrent cycles take cores from (docs/benchmarks.md, "Measured
# choices": the typed reconcile is faster with it, and 10M events fit the default heap).
PARALLEL_GC = "-XX:+UseParallelGC"


def driver_java_options(first_compiler_only: bool = False) -> str:
    """The driver JVM's options: ``-Dlog4j2.configurationFile=...`` unless detail was asked for, Spark's
    class archive where there is one (``spark.classes``: a faster start), :data:`FIRST_COMPILER_ONLY`
    for a job known to be short, then the user's (``CDC_BACKFILL_DRIVER_JAVA_OPTIONS``), last, so that
    a JIT flag of theirs wins, where they are set; else :data:`PARALLEL_GC`. Options of theirs replace
    the project's collector (the JVM refuses two), whatever they name."""
    from cdc_backfill.spark.classes import archive_options

    log4j = "" if spark_log_level() in _DETAILED else f"-Dlog4j2.configurationFile=file:{QUIET_LOG4J2}"
    jit = FIRST_COMPILER_ONLY if first_compiler_only else ""
    theirs = os.environ.get(DRIVER_JAVA_OPTIONS_ENV, "").strip()
    return " ".join(o for o in (log4j, archive_options(), jit, theirs or PARALLEL_GC) if o)


def with_driver_java_options(conf: dict[str, str]) -> dict[str, str]:
    """``conf`` with :func:`driver_java_options` added to ``spark.driver.extraJavaOptions``."""
    option = driver_java_options()
    if not option:
        return conf
    key = "spark.driver.extraJavaOptions"
    return {**conf, key: f"{conf[key]} {option}" if conf.get(key) else option}


# Spark's launcher adds ``--add-modules=jdk.incubator.vector`` to every driver JVM, and the JVM then
# prints this to stderr, with no setting to turn it off: people read it as an error in task logs.
JVM_NOISE = ("WARNING: Using incubator modules:",)


# spark-submit's report of the connectors it resolved with Ivy (``--packages``), on every run, and the
# repository it tries that cannot be reached here: a failed resolution still ends in its own error line.
IVY_REPORT = re.compile(
    r"^(:: (loading settings|resolving dependencies|resolution report|retrieving|USE VERBOSE)|Ivy Default Cache|"
    r"The jars for the packages stored in|\S+#\S+ added as a dependency|"
    r"\t(found \S+#|confs: \[|\d+ artifacts copied|:: modules in use|-{10}|\||\S+#\S+ from \S+ in \[|"
    r"Host \S+ not found|\[NOT FOUND *\] \S+ \(\d+ms\)|==== spark-packages|-- artifact \S+)|\t*$)"
)


def is_jvm_noise(line: str) -> bool:
    """A line the JVM prints on its own that says nothing about the run (pure)."""
    return line.startswith(JVM_NOISE) or IVY_REPORT.match(line) is not None
