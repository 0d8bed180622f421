"""The names of every folder and file of the landing zone and the state: what every reader and writer
of them uses (pure).

Landing zone: ``<landing>/stream/`` the stream files; ``<landing>/snapshots/<collection>/<chunk>.parquet``
the READ chunks; ``<landing>/_schemas/<collection>.json`` the capture's column types.

State: ``<state>/<collection>/v000007/*.parquet`` is one complete version; ``<state>/<collection>/current``
a link to the newest complete one; ``<state>/<collection>/_log.json`` the versions written;
``<state>/_runs/*.json`` each reconcile run's summary.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

STREAM_DIR = "stream"
SNAPSHOT_DIR = "snapshots"
SCHEMA_DIR = "_schemas"

CURRENT = "current"
LOG = "_log.json"
RUNS_DIR = "_runs"
_VERSION_RE = re.compile(r"^v(\d{6})$")


def stream_dir(landing: Path) -> Path:
    return Path(landing) / STREAM_DIR


def snapshot_dir(landing: Path, collection: str) -> Path:
    return Path(landing) / SNAPSHOT_DIR / collection


def schema_file(landing: Path, collection: str) -> Path:
    return Path(landing) / SCHEMA_DIR / f"{collection}.json"


def collection_dir(state: Path, collection: str) -> Path:
    return Path(state) / collection


def versions(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(m.group(1)) for p in folder.iterdir() if (m := _VERSION_RE.match(p.name)))


def current_path(state: Path, collection: str) -> Path | None:
    link = collection_dir(state, collection) / CURRENT
    return link if link.exists() else None


def read_log(folder: Path) -> list[dict[str, Any]]:
    path = folder / LOG
    return json.loads(path.read_text()) if path.exists() else []


def state_collections(state: Path) -> list[str]:
    """The collections that have a current version under ``state``, by name."""
    root = Path(state)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / CURRENT).exists() and not p.name.startswith("_"))
