"""A repair that completes, as a user types it: ``verify --repair`` prints the commands that finish it,
each runs as printed and the last verify finds every range equal; ``verify --repair --wait`` runs them
itself and exits 0 only then; a verify that finds a difference prints that command."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests.support.cli import as_printed, cli, in_process, ok, snapshot_as_typed
from tests.support.pg import plain_url
from tests.support.runs import reconcile_here
from tests.support.tamper import add_phantom, corrupt_one_row
from tests.support.workload import seed

pytestmark = [pytest.mark.pg, pytest.mark.spark, pytest.mark.slow]


def test_a_repair_completes_as_printed_and_with_wait(
    spark, fresh_db: str, tmp_path: Path, monkeypatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    seed(fresh_db, orders=300, lines=10)
    url = plain_url(fresh_db)
    src = ("--source", url)
    snapshot_as_typed(tmp_path, url, ["--collections", "public.orders", "--chunk-size", "50"])
    reconcile_here(spark, tmp_path / "lake", tmp_path / "state")
    verify = ("verify", *src, "--state", "state", "--collection", "public.orders")
    monkeypatch.chdir(tmp_path)
    ok(in_process(capsys, *verify))

    corrupt_one_row(tmp_path / "state", "public.orders")
    add_phantom(tmp_path / "state", "public.orders", fresh_db)
    res = cli(tmp_path, *verify, "--repair", "--landing", "lake")
    assert res.returncode == 1, res.stderr
    printed = [
        line.strip() for line in res.stdout.splitlines() if line.startswith("  ") and "cdc-backfill " in line
    ]
    assert [shlex.split(p)[1] for p in printed] == ["snapshot", "capture", "reconcile", "verify"], res.stdout
    for line in printed:  # by a shell, as printed, in order
        ok(as_printed(tmp_path, line))  # the last one is verify: exit 0, every range equal

    corrupt_one_row(tmp_path / "state", "public.orders")
    add_phantom(tmp_path / "state", "public.orders", fresh_db)
    differs = cli(tmp_path, *verify, "--landing", "lake")
    assert differs.returncode == 1
    # verify names the one command that repairs and waits: run as printed
    hint = next(line for line in differs.stdout.splitlines() if line.startswith("repair it: "))
    command = hint.removeprefix("repair it: ")
    assert shlex.split(command)[-4:] == ["--repair", "--wait", "--landing", "lake"], hint
    done = as_printed(tmp_path, command)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    assert "every range equal" in done.stdout


def test_wait_without_a_landing_is_refused(tmp_path: Path) -> None:
    res = cli(tmp_path, "verify", "--source", "postgresql://u@127.0.0.1:1/db", "--state", "state",
              "--collection", "public.t", "--repair", "--wait")  # fmt: skip
    assert res.returncode == 2 and "give it with --repair and --landing DIR" in res.stderr, res.stderr
