"""A collection's state as the tests read it: through its Delta log, as every reader does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from cdc_backfill.lakepath import LakePath, lake_path
from cdc_backfill.state.table import StateVersion, current_version


def state_version(state: Path, collection: str) -> StateVersion:
    version = current_version(state, collection)
    assert version is not None, f"no state of {collection} in {state}"
    return version


def state_files(state: LakePath, collection: str) -> list[LakePath]:
    """The Parquet files of the collection's current version (local paths, or S3 paths)."""
    return [lake_path(f) for f in state_version(state, collection).files]


def state_frame(spark: Any, state: Path, collection: str) -> Any:
    """The current version as a Spark DataFrame."""
    from cdc_backfill.state.spark.frames import read_version

    return read_version(spark, state_version(state, collection))


def state_table(state: Path, collection: str) -> pa.Table:
    """The current version as an Arrow table (read by pyarrow, no Spark)."""
    return state_version(state, collection).dataset().to_table()


def write_state(
    state: Path, collection: str, rows: list[dict[str, Any]], run: dict[str, Any] | None = None
) -> int:
    """Commit ``rows`` (with the bookkeeping columns) as the next version of a collection's state, as a
    reconcile would but written by pyarrow: for tests that need a state and no Spark. Its version."""
    import pyarrow.parquet as pq
    from deltalake import Schema

    from cdc_backfill.state.table import StateTable

    table = StateTable(state, collection)
    read = current_version(state, collection)
    files_dir = table.new_files_dir(read)
    files_dir.mkdir(parents=True)
    data = pa.Table.from_pylist(
        [{**r, "_cdc_position": b"\x00\x01", "_cdc_unknown": r.get("_cdc_unknown", [])} for r in rows]
    )
    data = data.cast(
        pa.schema(
            [f.with_type(pa.list_(pa.string())) if f.name == "_cdc_unknown" else f for f in data.schema]
        )
    )
    pq.write_table(data, files_dir / "part-00000.parquet")
    meta = {"position": [1, 2], "judged_chunks": []}
    counts = {"rows": len(rows), "position": [1, 2], "rows_with_unknown_columns": 0, **(run or {})}
    return table.commit(files_dir, Schema.from_arrow(data.schema).to_json(), read, meta, counts)
