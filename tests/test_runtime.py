from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cdc_backfill import runtime


@pytest.mark.parametrize(
    ("text", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('java version "1.8.0_292"', 8),
        ('openjdk version "21" 2023-09-19', 21),
        ('openjdk version "11.0.2-ea"', 11),
        ("no version here", None),
    ],
)
def test_parse_java_version(text: str, major: int | None) -> None:
    assert runtime.parse_java_version(text) == major


def test_default_environ_points_inside_the_project(tmp_path: Path) -> None:
    env = runtime.default_environ(tmp_path, java=None)
    assert env["AIRFLOW_HOME"] == str(tmp_path / ".airflow")
    assert env["AIRFLOW__CORE__DAGS_FOLDER"] == str(tmp_path / "dags")
    assert env["AIRFLOW__CORE__LOAD_EXAMPLES"] == "False"
    assert env["PYSPARK_PYTHON"] == sys.executable
    # SPARK_HOME is the pyspark package, which carries bin/spark-submit and the jars.
    assert (Path(env["SPARK_HOME"]) / "bin" / "spark-submit").exists()
    assert "JAVA_HOME" not in env


def test_apply_defaults_never_overwrites_the_users_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__CORE__LOAD_EXAMPLES", "True")
    applied = runtime.apply_defaults()
    assert "AIRFLOW__CORE__LOAD_EXAMPLES" not in applied


def test_this_machine_has_a_usable_java() -> None:
    info = runtime.find_java()
    assert info.ok, info.detail
    assert info.major is not None
    assert info.major >= runtime.MIN_JAVA


def test_java_ok_entry_point_used_by_the_makefile(capsys: pytest.CaptureFixture[str]) -> None:
    assert runtime.main(["java-ok"]) == 0
    assert "Java" in capsys.readouterr().out
    assert runtime.main(["nonsense"]) == 2
