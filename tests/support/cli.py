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
