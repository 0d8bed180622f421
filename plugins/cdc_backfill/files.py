"""Durable file writes: what the capture, the snapshot engine and the state writer all rely on."""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Write a small file whole: temporary name, fsync, rename, fsync of the folder."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.part")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
