"""The log files an ingest wrote (Spark's part files, or those the parse's workers typed themselves),
moved into their collection's version folder under names that carry their first and last position, each
made durable before the manifest names them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from cdc_backfill.eventlog.schema import POSITION
from cdc_backfill.files import fsync_dir
from cdc_backfill.lakepath import S3Path, lake_path, parquet_metadata, read_parquet
from cdc_backfill.landing.layout import ingest_file_name
from cdc_backfill.landing.stream import InputError


def name_files(out: Path, target: Path, run: str, start: int) -> list[Path]:
    """Spark's part files moved into the version's folder, named by their first and last position
    (read from the footer's statistics), each made durable; empty ones dropped."""
    target.mkdir(parents=True, exist_ok=True)
    named = []
    for n, part in enumerate(sorted(out.glob("part-*.parquet")), start=start):
        first, last, rows = position_span(part)
        if rows == 0:
            continue
        path = target / ingest_file_name(first, last, run, n)
        if not isinstance(part, S3Path):  # on S3 the part is whole once visible
            with open(part, "rb") as fh:
                os.fsync(fh.fileno())
        part.replace(path)
        named.append(path)
    fsync_dir(target)
    return named


def staged_files(folder: Path, staged: Sequence[str], target: Path, run: str, start: int) -> list[Path]:
    """The log files the parse's workers wrote (``staged``: their paths, as the workers named them)
    moved into the version's folder as ``name_files`` moves Spark's; InputError, before any is moved,
    where they are not all there (workers that wrote to a disk of their own)."""
    present = {p.name for p in folder.glob("part-*.parquet")} if staged else set()
    if present != {lake_path(p).name for p in staged}:
        raise InputError(
            f"the parse's workers wrote {len(staged)} log file(s) into {folder}, {len(present)} are there: "
            "run the ingest with a local master or with the landing on storage every worker shares (S3); "
            "nothing landed"
        )
    return name_files(folder, target, run, start)


def position_span(path: Path) -> tuple[bytes, bytes, int]:
    """(first, last, rows) of a log file written in position order: the column's statistics, else the
    column itself."""
    meta = parquet_metadata(path)
    if meta.num_rows == 0:
        return b"", b"", 0
    index = meta.schema.to_arrow_schema().get_field_index(POSITION)
    stats = [meta.row_group(g).column(index).statistics for g in range(meta.num_row_groups)]
    if all(s is not None and s.has_min_max for s in stats):
        return min(s.min for s in stats), max(s.max for s in stats), meta.num_rows
    keys = read_parquet(path, columns=[POSITION]).column(0).to_pylist()
    return min(keys), max(keys), meta.num_rows
