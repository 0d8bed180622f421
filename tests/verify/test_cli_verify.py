"""``cdc-backfill verify``: its help, and the refusals that must not need a running Spark job."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_backfill.cli import build_parser, main
from cdc_backfill.cli.verify import VERIFY_EPILOG
from tests.support.imports import imported_after as _imported_after
from tests.support.pg import sql
from tests.support.state import write_state

PURE = [
    "cdc_backfill.verify",
    "cdc_backfill.verify.forms",
    "cdc_backfill.verify.sql",
    "cdc_backfill.verify.ranges",
    "cdc_backfill.verify.compare",
    "cdc_backfill.verify.repair",
    "cdc_backfill.verify.source_side",
    "cdc_backfill.cli.verify",
]


def _verify_parser() -> argparse.ArgumentParser:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices["verify"]
    raise AssertionError("no subcommands")


def test_help_shows_every_option_with_an_example() -> None:
    flags = [f for a in _verify_parser()._actions for f in a.option_strings if f not in ("-h", "--help")]
    assert set(flags) == {
        "--source", "--state", "--collection", "--ranges", "--repair", "--signal-table", "--json", "--master",
        "--landing", "--wait", "--rechecks",
    }  # fmt: skip
    examples = [line for line in VERIFY_EPILOG.splitlines() if line.strip().startswith("cdc-backfill verify")]
    for flag in flags:
        assert any(flag in line for line in examples), f"{flag} has no example"
    out = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "verify", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "examples (every option)" in out and "Exit status" in out
    top = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "verify" in top


@pytest.mark.parametrize("module", PURE)
def test_verify_modules_import_neither_airflow_nor_spark(module: str) -> None:
    loaded = _imported_after(f"import {module}")
    assert "airflow" not in loaded and "pyspark" not in loaded


def test_refusals_before_anything_runs(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    url = "postgresql+psycopg2://nobody@127.0.0.1:1/none"
    assert main(["verify", "--source", url, "--state", str(tmp_path), "--collection", "public.t"]) == 2
    assert "no state at" in capsys.readouterr().err
    assert (
        main(
            ["verify", "--source", url, "--state", str(tmp_path), "--collection", "public.t", "--ranges", "0"]
        )
        == 2
    )
    assert "--ranges must be between 1 and 1,000" in capsys.readouterr().err
    assert (
        main(
            [
                "verify",
                "--source",
                url,
                "--state",
                str(tmp_path),
                "--collection",
                "public.t",
                "--rechecks",
                "0",
            ]
        )
        == 2
    )
    assert "--rechecks must be between 1 and 10, not 0" in capsys.readouterr().err
    write_state(tmp_path, "public.t", [{"id": 1}])
    assert main(["verify", "--source", url, "--state", str(tmp_path), "--collection", "public.t"]) == 3
    err = capsys.readouterr().err
    assert "cannot reach the source" in err and "nobody@127.0.0.1:1" in err


@pytest.mark.pg
def test_tables_that_cannot_be_verified(
    fresh_db: str, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    import cdc_backfill.spark.session

    def no_spark(*_: object, **__: object) -> None:
        raise AssertionError("verify started Spark before refusing the table")

    # refused before a Spark session starts (a JVM's start, for a typo)
    monkeypatch.setattr(cdc_backfill.spark.session, "build_session", no_spark)
    sql(fresh_db, "CREATE TABLE nokey (a int, b text)")
    for coll in ("public.nokey", "public.missing"):
        write_state(tmp_path, coll, [{"a": 1}])
    args = ["verify", "--source", fresh_db, "--state", str(tmp_path), "--collection"]
    assert main([*args, "public.nokey"]) == 2
    assert "public.nokey has no primary key" in capsys.readouterr().err
    assert main([*args, "public.missing"]) == 2
    assert "public.missing: no such table in the source" in capsys.readouterr().err


@pytest.mark.pg
@pytest.mark.spark
def test_columns_that_differ_are_refused(fresh_db: str, tmp_path: Path, spark, capsys) -> None:  # type: ignore[no-untyped-def]
    sql(fresh_db, "CREATE TABLE t (id int PRIMARY KEY, v text)", "INSERT INTO t VALUES (1, 'a')")
    write_state(tmp_path, "public.t", [{"id": 1, "w": "a"}])
    code = main(["verify", "--source", fresh_db, "--state", str(tmp_path), "--collection", "public.t"])
    assert code == 2
    assert "only in the source ['v'], only in the state ['w']" in capsys.readouterr().err
    # the same state with the right column: equal, and --repair has nothing to do
    write_state(tmp_path, "public.t", [{"id": 1, "v": "a"}])
    code = main(
        ["verify", "--source", fresh_db, "--state", str(tmp_path), "--collection", "public.t", "--repair"]
    )
    assert code == 0
    captured = capsys.readouterr()
    assert "every range equal" in captured.out and "nothing to repair" in captured.err
