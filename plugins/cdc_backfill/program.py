"""How the user runs this installation's ``cdc-backfill``, for the commands the product prints: each must
run as printed, also in a checkout whose virtual environment is not activated."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

# the PATH the user's shell gave, kept before ``runtime.apply_defaults`` puts the venv's bin first (for
# spark-submit); inherited by the processes started from here
USER_PATH_ENV = "CDC_BACKFILL_USER_PATH"


def program(executable: Path | None = None, cwd: Path | None = None, path: str | None = None) -> str:
    """``cdc-backfill`` when the shell finds this installation's script on PATH; else the script's path,
    relative to ``cwd`` when under it (``.venv/bin/cdc-backfill`` in a checkout), else whole."""
    script = Path(executable or sys.executable).parent / "cdc-backfill"
    if path is None:
        path = os.environ.get(USER_PATH_ENV, os.environ.get("PATH", ""))
    found = shutil.which("cdc-backfill", path=path)
    if found and Path(found).absolute() == script.absolute():
        return "cdc-backfill"
    try:
        return str(script.relative_to(cwd or Path.cwd()))
    except ValueError:
        return shlex.quote(str(script))
