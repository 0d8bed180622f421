"""A local spark-submit's driver heap: the project's 2g, where spark-submit alone gives 1g (in which an
ingest of a Debezium landing's 50 MB files ran out of heap), and the user's own setting first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cdc_backfill.spark.submit import LOCAL_DRIVER_MEMORY, printed_command, submit_environ, submit_head

HEAP = """
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
print("heap", spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory())
spark.stop()
"""


def test_a_local_master_gets_the_projects_heap_unless_the_user_set_one() -> None:
    assert submit_environ("local[2]", {})["SPARK_DRIVER_MEMORY"] == LOCAL_DRIVER_MEMORY == "2g"
    assert submit_environ("local[*]", {"SPARK_DRIVER_MEMORY": "6g"})["SPARK_DRIVER_MEMORY"] == "6g"
    assert "SPARK_DRIVER_MEMORY" not in submit_environ("spark://head:7077", {})  # a cluster's is the user's


def test_a_printed_command_carries_the_settings_the_cli_would_add() -> None:
    cmd = ["spark-submit", "--master", "local[2]", "job.py", "--landing", "my lake"]
    assert printed_command(cmd, "local[2]", {}) == (
        f"SPARK_DRIVER_MEMORY={LOCAL_DRIVER_MEMORY} SPARK_LOCAL_IP=127.0.0.1 spark-submit --master "
        "'local[2]' job.py --landing 'my lake'"
    )
    assert printed_command(cmd, "local[2]", {"SPARK_DRIVER_MEMORY": "6g"}).startswith(
        "SPARK_LOCAL_IP=127.0.0.1 spark-submit"
    )  # the user's own setting is theirs already
    assert printed_command(["spark-submit"], "spark://head:7077", {}) == "spark-submit"


def _heap(tmp_path: Path, env: dict[str, str], printed: bool = False) -> int:
    """The max heap of a spark-submit's driver started with ``env`` (``printed``: the command as
    ``--print-command`` prints it, run by a shell)."""
    job = tmp_path / "heap.py"
    job.write_text(HEAP)
    cmd = [*submit_head("spark-submit", "local[1]", "heap"), str(job)]
    if printed:
        line = printed_command(cmd, "local[1]", env)
        res = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True, timeout=300)
    else:
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return int(next(line.split()[1] for line in res.stdout.splitlines() if line.startswith("heap ")))


@pytest.mark.spark
def test_spark_submit_starts_the_driver_with_it_and_a_spark_defaults_conf_wins(tmp_path: Path) -> None:
    from cdc_backfill.runtime import apply_defaults

    apply_defaults()  # spark-submit on PATH, as the CLI has it
    env = submit_environ("local[1]")
    env.pop("SPARK_CONF_DIR", None)
    env["PYSPARK_PYTHON"] = sys.executable
    gib = 1024**3
    assert _heap(tmp_path, env) > 1.5 * gib  # 2g (the JVM reports a little less)
    bare = {k: v for k, v in env.items() if k not in ("SPARK_DRIVER_MEMORY", "SPARK_LOCAL_IP")}
    assert _heap(tmp_path, bare, printed=True) > 1.5 * gib  # as printed, in a shell without them
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text("spark.driver.memory 1g\n")
    assert _heap(tmp_path, {**env, "SPARK_CONF_DIR": str(conf)}) < 1.1 * gib
