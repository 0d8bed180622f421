"""The product as a data team installs it: the wheel, with its Airflow extra, in a fresh virtual
environment outside the checkout. From an empty folder: the demo, every command it prints (verify and
its repair, which re-snapshots and reconciles through spark-submit), a reconcile into a new state, then
the snapshot DAG in a plain Airflow home whose DAG files `cdc-backfill dags` wrote (no plugins folder)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

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


def test_the_wheel_in_a_fresh_venv_runs_the_demo_its_commands_and_a_dag(tmp_path: Path) -> None:
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
        url = printed[-1].split("PostgreSQL keeps running at ", 1)[1].split()[0].rstrip(";,")
        # the installed package's reconcile job, into a state of its own
        summary = run("cdc-backfill reconcile --landing demo/landing --state state2", work, env)
        assert json.loads(summary.splitlines()[-1])["collections"], summary

        # a plain Airflow home: the DAG files written by the command, the plugin from the package
        run("cdc-backfill dags --into airflow/dags", tmp_path, env)
        run("airflow db migrate", tmp_path, env)
        plugins = json.loads(run("airflow plugins -o json", tmp_path, env))
        assert "cdc_backfill" in [p["name"] for p in plugins]
        conf = {"collections": ["public\\.customers"], "landing_dir": str(work / "demo" / "landing"),
                "state_dir": str(work / "dag-state"), "verify": True}  # fmt: skip
        env_dag = {**env, "AIRFLOW_CONN_CDC_SOURCE": url,
                   "AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"})}  # fmt: skip
        # exit 0 only when the run succeeded: validate, signal, snapshot, drain, wait, reconcile, verify
        run(
            ["airflow", "dags", "test", "cdc_incremental_snapshot", "-c", json.dumps(conf)], tmp_path, env_dag
        )
        assert (work / "dag-state" / "public.customers" / "_delta_log").is_dir()
    finally:
        subprocess.run(["cdc-backfill", "demo", "--stop", "--folder", "demo"], cwd=work, env=env,
                       capture_output=True, timeout=120)  # fmt: skip
