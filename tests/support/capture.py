"""Running the capture as a user does, and reading what it landed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cdc_backfill.events import parse_file
from cdc_backfill.events.model import ChangeEvent
from cdc_backfill.layout import capture_stream_files


def landed_events(landing: Path) -> list[ChangeEvent]:
    """Every event in finished stream files, in file order, parsed by the canonical parser."""
    events: list[ChangeEvent] = []
    for f in capture_stream_files(landing):
        result = parse_file(str(f))
        assert result.quarantined == [], result.quarantined[:3]
        events.extend(result.events)
    return events


def capture_cmd(url: str, landing: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "cdc_backfill.cli",
        "capture",
        "postgres",
        "--source",
        url,
        "--landing",
        str(landing),
        *extra,
    ]


def run_capture(
    url: str, landing: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        capture_cmd(url, landing, "--drain", *extra),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
