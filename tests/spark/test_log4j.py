"""The driver JVM's options: the project's (quiet log, class archive), then the user's."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cdc_backfill.spark.log4j import (
    DRIVER_JAVA_OPTIONS_ENV,
    FIRST_COMPILER_ONLY,
    PARALLEL_GC,
    driver_java_options,
    with_driver_java_options,
)
from cdc_backfill.spark.submit import submit_head


def test_the_users_options_come_last_wherever_a_driver_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DRIVER_JAVA_OPTIONS_ENV, " -Xss4m -XX:+UseSerialGC ")
    options = driver_java_options()
    assert options.endswith(" -Xss4m -XX:+UseSerialGC") and "-Dlog4j2.configurationFile=" in options
    head = submit_head("spark-submit", "local[*]", "job")  # the CLI's jobs (Airflow's: test_runtime.py)
    assert head[head.index("--driver-java-options") + 1] == options
    conf = with_driver_java_options({"spark.driver.extraJavaOptions": "-Dmine=1"})  # a session built here
    assert conf["spark.driver.extraJavaOptions"] == f"-Dmine=1 {options}"


@pytest.mark.parametrize("value", [None, "", "   "])
def test_none_given_adds_nothing(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    monkeypatch.delenv(DRIVER_JAVA_OPTIONS_ENV, raising=False)
    before = driver_java_options()
    if value is not None:
        monkeypatch.setenv(DRIVER_JAVA_OPTIONS_ENV, value)
    assert driver_java_options() == before and not before.endswith(" ")


def test_the_printed_command_carries_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DRIVER_JAVA_OPTIONS_ENV, "-XX:TieredStopAtLevel=1")
    (tmp_path / "lake").mkdir()  # an empty landing zone (the tests' own jobs all run with this option)
    res = subprocess.run(
        ["cdc-backfill", "reconcile", "--landing", "lake", "--state", "state", "--print-command"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "-XX:TieredStopAtLevel=1'" in res.stdout, res.stdout  # inside --driver-java-options '...'


def test_a_short_job_runs_the_first_compiler_only_unless_the_user_says_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(DRIVER_JAVA_OPTIONS_ENV, raising=False)
    assert FIRST_COMPILER_ONLY not in driver_java_options()
    assert FIRST_COMPILER_ONLY in driver_java_options(first_compiler_only=True).split()
    head = submit_head("spark-submit", "local[*]", "job", first_compiler_only=True)
    assert FIRST_COMPILER_ONLY in head[head.index("--driver-java-options") + 1]
    monkeypatch.setenv(DRIVER_JAVA_OPTIONS_ENV, "-XX:TieredStopAtLevel=4")  # the JVM takes the last one
    assert driver_java_options(first_compiler_only=True).endswith(
        f"{FIRST_COMPILER_ONLY} -XX:TieredStopAtLevel=4"
    )


def test_a_small_reconcile_is_printed_with_the_first_compiler_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty landing zone is the smallest run (``reconcile.run_size``); the printed command is the
    one that runs."""
    monkeypatch.delenv(DRIVER_JAVA_OPTIONS_ENV, raising=False)
    (tmp_path / "lake").mkdir()
    res = subprocess.run(
        ["cdc-backfill", "reconcile", "--landing", "lake", "--state", "state", "--print-command"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f" {FIRST_COMPILER_ONLY} " in res.stdout, res.stdout


def test_a_small_ingest_is_printed_with_the_first_compiler_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A landing's few kilobytes of JSON are a small ingest (``reconcile.run_size``)."""
    monkeypatch.delenv(DRIVER_JAVA_OPTIONS_ENV, raising=False)
    (tmp_path / "lake" / "stream").mkdir(parents=True)
    (tmp_path / "lake" / "stream" / "batch.jsonl").write_text('{"payload": null}\n')
    res = subprocess.run(
        ["cdc-backfill", "ingest", "--landing", "lake", "--print-command"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f" {FIRST_COMPILER_ONLY} " in res.stdout, res.stdout


def test_the_throughput_collector_unless_the_user_gives_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """Options of theirs replace the project's collector, whatever they name: the JVM refuses two
    collectors, and no option is read for what it means."""
    monkeypatch.delenv(DRIVER_JAVA_OPTIONS_ENV, raising=False)
    assert PARALLEL_GC in driver_java_options().split()
    for theirs in ("-XX:+UseG1GC", "-Xss4m -XX:+UseSerialGC", "-XX:MaxGCPauseMillis=100"):
        monkeypatch.setenv(DRIVER_JAVA_OPTIONS_ENV, theirs)
        assert PARALLEL_GC not in driver_java_options().split(), theirs
        assert driver_java_options().endswith(f" {theirs}")
