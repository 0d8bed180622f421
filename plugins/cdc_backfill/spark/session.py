"""Building a SparkSession: called only by job entry points, the CLI and the test harness.

Transformations elsewhere take and return DataFrames; they never create a session themselves.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence

from pyspark.sql import SparkSession

from cdc_backfill.runtime import apply_defaults
from cdc_backfill.spark.log4j import is_jvm_noise, spark_log_level, with_driver_java_options
from cdc_backfill.spark.packages import ConnectorError, job_packages, unresolved
from cdc_backfill.spark.submit import LOCAL_DRIVER_MEMORY
from cdc_backfill.storage import spark_conf

log = logging.getLogger(__name__)

# What every session gets, whatever its master: event positions and timestamps compared in UTC whatever
# the machine's zone, and ANSI SQL (an overflow is an error, not a NULL).
SESSION_CONF: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.ansi.enabled": "true",
}
# Small-machine defaults, for a local master only (a cluster's are the user's): 64 shuffle partitions,
# not Spark's 200: adaptive execution coalesces a small job's shuffles to a few tasks anyway, and with 8
# the reconcile of 10M events ran out of the 2g heap (partitions of 1.25M wide rows). A local reconcile
# sizes them to its run (:func:`size_shuffle`).
LOCAL_CONF: dict[str, str] = {
    "spark.sql.shuffle.partitions": "64",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": LOCAL_DRIVER_MEMORY,
}


SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
_SIZED = "spark.cdc_backfill.shuffleSized"  # set where size_shuffle chose the value, not the user


def shuffle_partitions(events: int) -> int:
    """Shuffle partitions for a local run over ``events`` log events: about one per 150k, 8 at least,
    200 at most (pure). Every partition costs a small run a task; too few overflow the heap of a large
    one."""
    return max(8, min(200, events // 150_000))


def size_shuffle(spark: SparkSession, events: int) -> None:
    """A local session's shuffle partitions sized to a run over ``events`` log events, unless the user
    chose a number (a cluster's is the user's to choose)."""
    if not spark.sparkContext.master.startswith("local"):
        return
    ours = spark.conf.get(_SIZED, "false") == "true"
    if not ours and spark.conf.get(SHUFFLE_PARTITIONS) != LOCAL_CONF[SHUFFLE_PARTITIONS]:
        return
    spark.conf.set(SHUFFLE_PARTITIONS, str(shuffle_partitions(events)))
    spark.conf.set(_SIZED, "true")


def session_conf(master: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The configuration a session is built with (pure: tested on its own)."""
    conf: dict[str, str] = dict(SESSION_CONF)
    if master is None or master.startswith("local"):
        conf.update(LOCAL_CONF)
    conf.update(spark_conf())  # a lake on S3 (cdc_backfill.storage)
    conf.update(extra or {})
    return conf


def _submitted_master() -> str | None:
    """The ``--master`` of the spark-submit that started this process, if one did (its gateway is up
    then): a job's own default must not override it. Read from the JVM's properties, over a gateway
    connection of its own: the context is made later, with the session's settings."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return None
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway()  # spark-submit's JVM: its port is in the environment
    try:
        return gateway.jvm.java.lang.System.getProperty("spark.master")
    finally:
        gateway.close()


def build_session(
    app_name: str = "cdc_backfill",
    master: str | None = None,
    conf: dict[str, str] | None = None,
    lake: Sequence[object] = (),
    kafka: bool = False,
) -> SparkSession:
    """A session on ``master`` (default: ``SPARK_MASTER`` or ``local[*]``) with the project's defaults,
    and the connectors its work needs (``spark.packages.job_packages``): Spark's Kafka source with
    ``kafka``, the s3a connector where a location of ``lake`` is on S3. A session already running (a
    job under spark-submit, which was given them) is returned as it is."""
    apply_defaults()
    # py4j logs at INFO from finalizers at interpreter exit, after pytest/logging closed the streams.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    master = master or os.environ.get("SPARK_MASTER") or _submitted_master() or "local[*]"
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # see spark.submit.submit_environ
    existing = SparkSession.getActiveSession()
    if existing is not None:  # getOrCreate would return it too, warning that the settings are ignored
        return existing
    builder = SparkSession.builder.appName(app_name).master(master)
    # Spark's JVM log at WARN: the driver runs here whatever the master
    settings = with_driver_java_options(
        session_conf(master, {**job_packages(lake, kafka).conf(), **(conf or {})})
    )
    _launch_gateway({"spark.master": master, "spark.app.name": app_name, **settings})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(spark_log_level())
    log.info("Spark %s session on %s", spark.version, master)
    return spark


# whether this module started the driver's JVM in this process: a session stopped earlier leaves it up,
# and PySpark keeps using it
_jvm_started = threading.Event()


def _launch_gateway(settings: dict[str, str]) -> None:
    """Start the driver's JVM as pyspark would, but with its stderr relayed line by line without the
    JVM's own noise (``log4j.is_jvm_noise``), and make the context on it. Not when a JVM is up already
    (a session stopped earlier in this process, or spark-submit's)."""
    import sys

    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if _jvm_started.is_set() or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    read_end, write_end = os.pipe()  # the JVM's stderr, ours to read even when it exits at once
    stream = os.fdopen(read_end, "rb")
    try:
        gateway = launch_gateway(conf, popen_kwargs={"stderr": write_end})
    except Exception:
        os.close(write_end)
        said = [line.decode("utf-8", "replace") for line in stream]
        stream.close()
        fetch = next((m for m in map(unresolved, said) if m), None)
        if fetch:  # Ivy could not fetch a connector: said in one line, not as Spark's trace
            raise ConnectorError(fetch) from None
        sys.stderr.writelines(line for line in said if not is_jvm_noise(line))
        raise
    os.close(write_end)
    _jvm_started.set()

    def relay() -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace")
            if not is_jvm_noise(line):
                try:
                    sys.stderr.write(line)
                    sys.stderr.flush()
                except (OSError, ValueError):  # a stream closed at exit: keep draining the pipe
                    pass

    threading.Thread(target=relay, name="spark-jvm-stderr", daemon=True).start()
    SparkContext(conf=conf, gateway=gateway)  # the builder's getOrCreate takes it
