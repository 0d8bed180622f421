"""Running the capture as a user does, and reading what it landed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cdc_backfill.events import parse_file
from cdc_backfill.events.model import ChangeEvent
from cdc_backfill.landing.layout import capture_stream_files


def landed_events(landing: Path) -> list[ChangeEvent]:
    """Every event in finished stream files, in file order, parsed by the canonical parser."""
    events: list[ChangeEvent] = []
    for f in capture_stream_files(landing):
        result = parse_file(str(f))
        assert result.quarantined == [], result.quarantined[:3]
        events.extend(result.events)
    return events


def landed_creates(landing: Path, collection: str, fmt: str) -> list[dict]:  # type: ignore[type-arg]
    """The rows of every create landed for the collection (JSON lines, or log files a manifest names)."""
    if fmt == "json":
        return [e.after for e in landed_events(landing) if e.collection == collection and e.op == "c"]  # type: ignore[misc]

    from cdc_backfill.lakepath import lake_path, read_parquet
    from cdc_backfill.landing.layout import LOG_DIR
    from cdc_backfill.landing.manifests import named_log_files

    rows = []
    for f in sorted(named_log_files(landing)):
        if f.startswith(f"{collection}/"):
            rows += [
                r for r in read_parquet(lake_path(landing) / LOG_DIR / f).to_pylist() if r["_cdc_op"] == "c"
            ]
    return rows


def capture_cmd(url: str, landing: Path, *extra: str, fmt: str = "json") -> list[str]:
    """``capture postgres`` as a user types it; ``fmt`` the landing format (``--format``)."""
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
        "--format",
        fmt,
        *extra,
    ]


def run_capture(
    url: str, landing: Path, *extra: str, env: dict[str, str] | None = None, fmt: str = "json"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        capture_cmd(url, landing, "--drain", *extra, fmt=fmt),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
