"""Durable file writes: what the capture, the snapshot engine and the state writer all rely on."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa


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


def write_parquet(path: Path, table: pa.Table) -> Path:
    """A Parquet file written whole: ``.<name>.part``, fsync, rename, fsync of the folder. A crash
    leaves the file or a ``.part`` that no reader lists."""
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.part")
    with open(tmp, "wb") as fh:
        pq.write_table(table, fh, compression="zstd")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
    return path
