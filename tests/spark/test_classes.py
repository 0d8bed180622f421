"""Spark's class archive: named by Java and Spark, mapped by every driver JVM when it exists, never
required (a JVM that cannot use it runs without it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_backfill.spark.classes import ARCHIVE_ENV, QUIET, archive_options, archive_path
from cdc_backfill.spark.log4j import DRIVER_JAVA_OPTIONS_ENV, driver_java_options
from cdc_backfill.spark.submit import submit_head


def test_the_archive_is_named_by_spark_and_java(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ARCHIVE_ENV, raising=False)
    path = archive_path()
    assert path is not None and path.name.startswith("spark-") and path.suffix == ".jsa"
    assert "-java" in path.name


def test_off_means_no_archive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ARCHIVE_ENV, "off")
    assert archive_path() is None and archive_options() == ""
    assert "SharedArchiveFile" not in driver_java_options()


def test_an_archive_that_exists_is_mapped_by_the_driver_and_spark_submit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "spark.jsa"
    monkeypatch.setenv(ARCHIVE_ENV, str(archive))
    monkeypatch.delenv(DRIVER_JAVA_OPTIONS_ENV, raising=False)
    assert archive_options() == ""  # not built yet: nothing to map
    archive.write_bytes(b"")
    assert f" -XX:SharedArchiveFile={archive} {QUIET}" in driver_java_options()
    head = submit_head("spark-submit", "local[*]", "job")
    assert f"-XX:SharedArchiveFile={archive}" in head[head.index("--driver-java-options") + 1]


@pytest.mark.spark
def test_a_jvm_that_cannot_use_the_archive_runs_without_it_and_says_nothing(tmp_path: Path) -> None:
    """A stale or broken archive (another Java, other jars) must never stop Spark nor print on stdout,
    where spark-submit's output is read."""
    import subprocess

    from cdc_backfill.runtime import find_java

    broken = tmp_path / "broken.jsa"
    broken.write_bytes(b"not an archive")
    java = find_java().home / "bin" / "java"
    res = subprocess.run(
        [str(java), f"-XX:SharedArchiveFile={broken}", *QUIET.split(), "-version"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert res.stdout == "" and "cds" not in res.stderr.lower()
