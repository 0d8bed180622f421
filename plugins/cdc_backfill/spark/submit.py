"""spark-submit command lines, built as data (pure; no pyspark import) and tested as such."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from cdc_backfill.spark.log4j import driver_java_options
from cdc_backfill.spark.packages import job_packages

# the jobs' entry points, files of the package (cdc_backfill/jobs/): spark-submit runs them as scripts
JOBS = Path(__file__).resolve().parents[1] / "jobs"


def submit_head(spark_submit: str, master: str, name: str, first_compiler_only: bool = False) -> list[str]:
    """spark-submit, its master, the application's name and the driver's JVM options."""
    cmd = [spark_submit, "--master", master, "--name", name]
    java_options = driver_java_options(first_compiler_only)
    if java_options:
        cmd += ["--driver-java-options", java_options]
    return cmd


def reconcile_command(
    landing: str,
    state: str,
    collections: Sequence[str] | None = None,
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
    spark_submit: str = "spark-submit",
    verbose: bool = False,
    signal_table: str | None = None,
    ingest: bool = False,
    small: bool = False,
    kafka: tuple[str, str] | None = None,
) -> list[str]:
    """``small``: the run is known to be short (``reconcile.run_size.small_run``). ``kafka``: (bootstrap
    servers, topics) read into the landing first, in the same job."""
    job = JOBS / "reconcile.py"
    cmd = submit_head(spark_submit, master, "cdc_backfill_reconcile", first_compiler_only=small)
    for key, value in sorted((conf or {}).items()):
        cmd += ["--conf", f"{key}={value}"]
    cmd += job_packages([landing, state], kafka=kafka is not None).args()
    cmd += [str(job), "--landing", landing, "--state", state]
    if kafka:
        cmd += ["--bootstrap-servers", kafka[0], "--topics", kafka[1]]
    if collections:
        cmd += ["--collections", *collections]
    if signal_table:
        cmd += ["--signal-table", signal_table]
    if ingest:
        cmd.append("--ingest")
    if verbose:
        cmd.append("--verbose")
    return cmd


def ingest_command(
    landing: str,
    inputs: Sequence[str] = (),
    master: str = "local[*]",
    catalog: bool = False,
    column_types: str | None = None,
    signal_table: str | None = None,
    spark_submit: str = "spark-submit",
    verbose: bool = False,
    small: bool = False,
) -> list[str]:
    """``small``: the ingest is known to be short (``reconcile.run_size.first_compiler_only_to_ingest``)."""
    job = JOBS / "ingest.py"
    cmd = submit_head(spark_submit, master, "cdc_backfill_ingest", first_compiler_only=small)
    cmd += job_packages([landing, *inputs]).args()
    cmd += [str(job), "--landing", landing, *inputs]
    return cmd + typing_args(catalog, column_types, signal_table, verbose)


def typing_args(
    catalog: bool, column_types: str | None, signal_table: str | None, verbose: bool
) -> list[str]:
    """The options the jobs that type events share (``ingest``, ``capture kafka``): where types come
    from, the signal table, the detail of the job's steps."""
    args = ["--catalog"] if catalog else []
    if column_types:
        args += ["--column-types", column_types]
    if signal_table:
        args += ["--signal-table", signal_table]
    return [*args, "--verbose"] if verbose else args


def capture_kafka_command(
    landing: str,
    bootstrap: str,
    topics: str,
    follow: bool = False,
    interval: float | None = None,
    master: str = "local[*]",
    catalog: bool = False,
    column_types: str | None = None,
    signal_table: str | None = None,
    skip_lost_offsets: bool = False,
    spark_submit: str = "spark-submit",
    verbose: bool = False,
) -> list[str]:
    """``capture kafka``'s job, with Spark's Kafka source fetched by its Maven coordinates."""
    job = JOBS / "capture_kafka.py"
    cmd = submit_head(spark_submit, master, "cdc_backfill_capture_kafka")
    cmd += [*job_packages([landing], kafka=True).args(), str(job), "--landing", landing]
    cmd += ["--bootstrap-servers", bootstrap, "--topics", topics, "--follow" if follow else "--drain"]
    if interval is not None:
        cmd += ["--interval", str(interval)]
    if skip_lost_offsets:
        cmd.append("--skip-lost-offsets")
    return cmd + typing_args(catalog, column_types, signal_table, verbose)


# A local driver's heap, as a session built in the process gets it (spark.session.LOCAL_CONF): spark-submit
# starts the JVM with 1g otherwise, in which ingest of a Debezium landing's 50 MB files ran out of heap.
LOCAL_DRIVER_MEMORY = "2g"


def submit_environ(master: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a spark-submit. A local master binds to the loopback address (else Spark
    warns that the host name resolves to one, on every run) and its driver gets
    :data:`LOCAL_DRIVER_MEMORY` through ``SPARK_DRIVER_MEMORY``, which spark-submit reads last: a
    ``spark.driver.memory`` of the user's (``spark-defaults.conf``, ``--conf``) or their own
    ``SPARK_DRIVER_MEMORY`` wins."""
    env = dict(os.environ if environ is None else environ)
    if master.startswith("local"):
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        env.setdefault("SPARK_DRIVER_MEMORY", LOCAL_DRIVER_MEMORY)
    return env


def printed_command(cmd: Sequence[str], master: str, environ: Mapping[str, str] | None = None) -> str:
    """``cmd`` as a user runs it in a shell (``--print-command``): the settings :func:`submit_environ`
    adds to their environment written before it, so that it runs as the CLI runs it."""
    env = dict(os.environ if environ is None else environ)
    added = sorted((k, v) for k, v in submit_environ(master, env).items() if env.get(k) != v)
    return " ".join([*(f"{k}={shlex.quote(v)}" for k, v in added), shlex.join(cmd)])
