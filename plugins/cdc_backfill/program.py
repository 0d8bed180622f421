"""How the user runs this installation's ``cdc-backfill``, for the commands the product prints: each must
run as printed, also in a checkout whose virtual environment is not activated."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path


def program(executable: Path | None = None, cwd: Path | None = None, path: str | None = None) -> str:
    """``cdc-backfill`` when the shell finds this installation's script on PATH; else the script's path,
    relative to ``cwd`` when under it (``.venv/bin/cdc-backfill`` in a checkout), else whole."""
    script = Path(executable or sys.executable).parent / "cdc-backfill"
    found = shutil.which("cdc-backfill", path=path if path is not None else os.environ.get("PATH"))
    if found and Path(found).absolute() == script.absolute():
        return "cdc-backfill"
    try:
        return str(script.relative_to(cwd or Path.cwd()))
    except ValueError:
        return shlex.quote(str(script))
