"""The command line as a user runs it: ``cdc-backfill ...`` in a folder of the test's, as a process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def cli(cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def in_process(capsys, *args: str) -> subprocess.CompletedProcess[str]:  # type: ignore[no-untyped-def]
    """``cdc-backfill ...`` run by this process's ``main``, as :func:`cli` gives a command's result: a
    command that runs Spark in its own process (``verify``) takes the test session's instead of starting
    a JVM. Paths are the test's working folder's."""
    from cdc_backfill.cli.main import main

    capsys.readouterr()
    code = main(list(args))
    printed = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, printed.out, printed.err)


def ok(res: subprocess.CompletedProcess[str]) -> str:
    """A command that must succeed; its stdout."""
    assert res.returncode == 0, (res.args, res.stdout[-2000:], res.stderr[-3000:])
    return res.stdout


def snapshot_as_typed(cwd: Path, url: str, *signals: list[str], landing: str = "lake") -> None:
    """The path from a bare source to a landing holding its snapshots, as a user types it: the signal
    tables, the capture's slot, each ``signal execute-snapshot`` with its arguments, the engine, the
    drain."""
    src = ("--source", url)
    ok(cli(cwd, "signal", "init", *src))
    ok(cli(cwd, "capture", "postgres", *src, "--landing", landing, "--drain"))
    for args in signals:
        ok(cli(cwd, "signal", "execute-snapshot", *src, *args))
    ok(cli(cwd, "snapshot", "run", "--once", *src, "--landing", landing))
    ok(cli(cwd, "capture", "postgres", *src, "--landing", landing, "--drain"))


def as_printed(cwd: Path, line: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """A command line the product printed for the user, run by a shell exactly as printed."""
    return subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True, timeout=timeout)
