"""Delta file statistics from a Parquet file's footer (pure but for reading the footer).

Readers of the table (delta-rs, DuckDB, Spark with Delta) skip a file whose range cannot hold what they
look for; the reconcile takes each file's row count from them (the rows of the files a small run keeps). Only values that compare in Delta
as they do in Parquet are given: integers, finite floating points, dates and strings of at most 32 characters
(Delta truncates longer ones, and a truncated maximum would be wrong). The rest get counts only.
"""

from __future__ import annotations

import json
import math
from typing import Any

from cdc_backfill.lakepath import LakePath, parquet_metadata

_MAX_TEXT = 32


def file_stats(path: LakePath) -> str:
    """The Delta ``stats`` JSON of one Parquet file: numRecords, and per top-level column its null count
    and, where exact, its minimum and maximum."""

    meta = parquet_metadata(path)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    schema = meta.schema.to_arrow_schema()
    for column in range(meta.num_columns):
        name = meta.schema.column(column).path
        if "." in name:
            continue  # a leaf of a nested column: Delta's stats are per leaf, left out here
        lo = hi = None
        count = 0
        exact = True
        for g in range(meta.num_row_groups):
            st = meta.row_group(g).column(column).statistics
            if st is None or not st.has_null_count:
                exact = False
                break
            count += st.null_count
            if not st.has_min_max:
                continue
            lo = st.min if lo is None else min(lo, st.min)
            hi = st.max if hi is None else max(hi, st.max)
        if not exact:
            continue
        nulls[name] = count
        value = _exact(schema.field(name).type, lo, hi)
        if value is not None:
            mins[name], maxs[name] = value
    doc = {"numRecords": meta.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}
    return json.dumps(doc, allow_nan=False)


def _exact(kind: Any, lo: Any, hi: Any) -> tuple[Any, Any] | None:
    import pyarrow as pa

    if lo is None or hi is None:
        return None
    if pa.types.is_integer(kind):
        return int(lo), int(hi)
    if pa.types.is_floating(kind):
        # NaN and the infinities have no JSON number: counts only
        return (float(lo), float(hi)) if math.isfinite(lo) and math.isfinite(hi) else None
    if pa.types.is_date32(kind):
        return lo.isoformat(), hi.isoformat()
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        lo, hi = _text(lo), _text(hi)
        return (lo, hi) if len(lo) <= _MAX_TEXT and len(hi) <= _MAX_TEXT else None
    return None


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
