"""The product as a new user meets it: the wheel, with its Airflow extra, in a fresh virtual environment
outside the checkout. From an empty folder: the demo and every command it prints (verify and its repair,
which re-snapshots and reconciles through spark-submit); then docs/getting-started.md as written, its
source's URL alone changed: a database of the user's under a writer, through the command line, then
the snapshot DAG in a plain Airflow home whose DAG files `cdc-backfill dags` wrote (no plugins folder),
and the guides' blocks of the reconcile, the signals and the engine on the lake they made."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.docs import Shell, block_under, command_of
from tests.support.pg import plain_url
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.slow, pytest.mark.pg, pytest.mark.spark, pytest.mark.airflow]

UV = Path(sys.executable).with_name("uv")


def user_environ(venv: Path, home: Path) -> dict[str, str]:
    """A shell of a user who activated ``venv``: none of this checkout's settings (its Airflow home, its
    Spark, its package folder), the machine's PATH behind the venv's."""
    mine = ("AIRFLOW", "CDC_BACKFILL", "SPARK", "PYSPARK", "PYTHON", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(mine)}
    machine = os.environ.get("CDC_BACKFILL_USER_PATH") or os.environ["PATH"]
    path = [p for p in machine.split(os.pathsep) if not p.startswith(str(ROOT))]
    return {**env, "PATH": os.pathsep.join([str(venv / "bin"), *path]), "VIRTUAL_ENV": str(venv),
            "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False"}  # fmt: skip


def run(cmd: str | list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> str:
    """A command as typed (a string is split as a shell would); its stdout, failing on a non-zero exit."""
    args = shlex.split(cmd) if isinstance(cmd, str) else cmd
    res = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert res.returncode == 0, f"{cmd}\n{res.stdout[-3000:]}\n{res.stderr[-5000:]}"
    return res.stdout


def test_the_wheel_in_a_fresh_venv_runs_the_demo_and_the_getting_started_page(
    tmp_path: Path, fresh_db: str
) -> None:
    dist, venv, work = tmp_path / "dist", tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    run(
        [str(UV), "build", "--wheel", "--quiet", "--out-dir", str(dist), str(ROOT)],
        tmp_path,
        dict(os.environ),
    )
    [wheel] = dist.glob("cdc_backfill-*.whl")
    run([str(UV), "venv", "--quiet", "--python", sys.executable, str(venv)], tmp_path, dict(os.environ))
    # the versions this checkout is tested with (constraints.txt), from uv's cache
    run([str(UV), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), f"{wheel}[airflow]",
         "-c", str(ROOT / "constraints.txt")], tmp_path, dict(os.environ))  # fmt: skip
    env = user_environ(venv, tmp_path / "airflow")

    out = run("cdc-backfill demo --rows 3000 --folder demo --keep", work, env)
    printed = out.split("\nNext:\n", 1)[1].splitlines()
    try:
        cmds = [c.strip() for c in printed[:-1:2]]
        assert cmds and all(shlex.split(c)[0] == "cdc-backfill" for c in cmds), cmds
        for cmd in cmds:  # verify, and its repair: a re-snapshot reconciled by spark-submit
            run(cmd, work, env)
    finally:
        subprocess.run(["cdc-backfill", "demo", "--stop", "--folder", "demo"], cwd=work, env=env,
                       capture_output=True, timeout=120)  # fmt: skip
    getting_started(tmp_path / "mine", fresh_db, env)


PAGE = "docs/getting-started.md"
PAGE_URL = "postgresql://cdc:secret@127.0.0.1:5432/shop"


def getting_started(folder: Path, url: str, env: dict[str, str]) -> None:
    """Sections 3 and 4 of the page, line by line in one shell: the user's own table, a writer changing
    it while the engine reads it; then the same lake through Airflow."""
    seed(url)
    folder.mkdir()
    shell = Shell(folder, env)
    cli_lines = block_under(PAGE, "## 3. Your own PostgreSQL")
    assert cli_lines[0].startswith(f"export CDC_BACKFILL_SOURCE_URL='{PAGE_URL}'"), cli_lines[0]
    shell.run(cli_lines[0].replace(PAGE_URL, plain_url(url)))
    writers = Writers(url, seed_value=7).start()
    try:
        for line in cli_lines[1:]:
            out = shell.run(line)
            if line.startswith("cdc-backfill snapshot run"):  # changes before, during and after it
                writers.wait_for_changes(20)
                writers.stop()
    finally:
        writers.stop()
    assert "public.orders" in out, out  # `cdc-backfill state` lists the collection

    airflow_lines = block_under(PAGE, "## 4. The same lake, through Airflow")
    assert airflow_lines[-1].startswith("airflow dags test cdc_incremental_snapshot"), airflow_lines
    versions = len(list((folder / "state" / "public.orders" / "_delta_log").glob("*.json")))
    for line in airflow_lines:  # exits 0 only when the run succeeded: ... reconcile, verify
        shell.run(line)
    assert len(list((folder / "state" / "public.orders" / "_delta_log").glob("*.json"))) > versions

    # the guides' blocks, in the same folder and shell: reconcile, read the state, verify, repair; the
    # signals; the engine (a command run before word for word is not run again)
    for page, heading in GUIDE_BLOCKS:
        ran = {command_of(line) for line in shell.ran}
        new = [line for line in block_under(page, heading) if command_of(line) not in ran]
        assert new, (page, heading)  # each block has commands of its own
        for line in new:
            shell.run(line)


# the guides' blocks that run on the lake the page made (the capture's block follows the stream until
# stopped: its commands run in the capture tests)
GUIDE_BLOCKS = [
    ("docs/guides/reconcile-and-verify.md", "## Reconcile and verify"),
    ("docs/guides/postgresql.md", "## Signals"),
    ("docs/guides/postgresql.md", "## Snapshot engine"),
]
