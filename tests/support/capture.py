"""Running the capture as a user does, and reading what it landed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from cdc_backfill.eventlog.schema import POSITION
from cdc_backfill.lakepath import lake_path, read_parquet
from cdc_backfill.landing.layout import LOG_DIR
from cdc_backfill.landing.manifests import named_log_files


def landed_rows(landing: Path, collection: str | None = None) -> list[dict[str, Any]]:
    """The rows of the log files a manifest names (of one collection, or of all, each with its
    ``collection``), in position order."""
    rows = []
    for f in sorted(named_log_files(landing)):
        name = f.split("/", 1)[0]
        if collection is None or name == collection:
            rows += [
                {**r, "collection": name} for r in read_parquet(lake_path(landing) / LOG_DIR / f).to_pylist()
            ]
    return sorted(rows, key=lambda r: r[POSITION])


def landed_creates(landing: Path, collection: str) -> list[dict[str, Any]]:
    """The rows of every create landed for the collection."""
    return [r for r in landed_rows(landing, collection) if r["_cdc_op"] == "c"]


def capture_cmd(url: str, landing: Path, *extra: str) -> list[str]:
    """``capture postgres`` as a user types it."""
    return [
        sys.executable, "-m", "cdc_backfill.cli", "capture", "postgres", "--source", url, "--landing", str(landing),
        *extra,
    ]  # fmt: skip


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
