"""The program name in printed commands: as the user's shell runs this installation's script."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cdc_backfill.program import program


def test_printed_commands_name_cdc_backfill_as_the_shell_finds_it(tmp_path: Path) -> None:
    venv = tmp_path / ".venv" / "bin"
    assert (
        program(venv / "python", tmp_path, path="") == ".venv/bin/cdc-backfill"
    )  # a checkout, not activated
    assert program(Path("/opt/my venv/bin/python"), tmp_path, path="") == "'/opt/my venv/bin/cdc-backfill'"
    venv.mkdir(parents=True)
    script = venv / "cdc-backfill"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert program(venv / "python", tmp_path, path=str(venv)) == "cdc-backfill"  # activated: as typed
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "cdc-backfill").write_text("#!/bin/sh\n")
    (other / "cdc-backfill").chmod(0o755)
    # another installation first on PATH: this one's path, not the name the shell would take elsewhere
    assert program(venv / "python", tmp_path, path=str(other)) == ".venv/bin/cdc-backfill"


def test_the_venv_put_first_on_path_for_spark_submit_does_not_change_the_printed_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from cdc_backfill.program import USER_PATH_ENV
    from cdc_backfill.runtime import apply_defaults

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv(USER_PATH_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    apply_defaults()
    assert os.environ["PATH"].startswith(str(Path(sys.executable).parent))  # for spark-submit
    assert os.environ[USER_PATH_ENV] == "/usr/bin:/bin"
    assert program() != "cdc-backfill"  # the user's shell would not find it: its path, as the shell needs
