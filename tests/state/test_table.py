"""The state table without Spark: commits, what they record, statistics, carries and other writers."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdc_backfill.state.file_stats import file_stats
from cdc_backfill.state.table import StateError, StateTable, current_version, state_collections
from tests.support.state import write_state


def test_a_commit_records_what_the_version_consumed_and_any_reader_sees_its_rows(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    write_state(tmp_path, "public.t", [{"id": i, "v": str(i)} for i in range(3)])
    write_state(tmp_path, "public.t", [{"id": i, "v": "x"} for i in range(5)], run={"events_applied": 2})
    current = current_version(tmp_path, "public.t")
    assert current is not None and current.version == 1 and len(current.files) == 1
    assert current.meta["position"] == [1, 2] and current.run["events_applied"] == 2
    # another engine reads the same version through the log: the replaced file is not read again
    assert DeltaTable(str(tmp_path / "public.t")).to_pyarrow_table().num_rows == 5
    assert state_collections(tmp_path) == ["public.t"]


def test_another_writers_commit_keeps_what_the_last_run_consumed(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    write_state(tmp_path, "public.t", [{"id": 1, "v": "a"}])
    table = DeltaTable(str(tmp_path / "public.t"))
    table.optimize.compact()  # commits a version of its own, without our commit info
    table.create_checkpoint()
    current = current_version(tmp_path, "public.t")
    assert current is not None and current.meta["position"] == [1, 2]


def test_statistics_give_exact_ranges_only(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    table = pa.table(
        {
            "id": pa.array([3, 1, None], pa.int64()),
            "name": ["b", "a", "c"],
            "long": ["x" * 40, "y", None],
            "at": pa.array([1, 2, 3], pa.timestamp("us")),
            "tags": pa.array([["a"], [], None], pa.list_(pa.string())),
            "x": pa.array([1.5, float("inf"), None], pa.float64()),
        }
    )
    pq.write_table(table, path)
    stats = json.loads(file_stats(path))
    assert stats["numRecords"] == 3
    assert (stats["minValues"], stats["maxValues"]) == ({"id": 1, "name": "a"}, {"id": 3, "name": "c"})
    assert stats["nullCount"]["id"] == 1 and "tags" not in stats["nullCount"]
    assert stats["nullCount"]["x"] == 1 and "x" not in stats["maxValues"]  # no JSON number for infinity


def test_only_the_current_versions_carry_is_kept(tmp_path: Path) -> None:
    table = StateTable(tmp_path, "public.t")
    for n in range(2):
        read = current_version(tmp_path, "public.t")
        files = table.new_files_dir(read)
        files.mkdir(parents=True)
        pq.write_table(pa.table({"id": [n]}), files / "part-0.parquet")
        (table.carry_dir(files) / "rows").mkdir(parents=True)
        table.commit(
            files,
            '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}',
            read,
            {},
            {},
            carry=True,
        )
    current = current_version(tmp_path, "public.t")
    assert current is not None and current.carry is not None
    assert [p.name for p in (tmp_path / "public.t" / "_cdc_carry").iterdir()] == [current.carry.name]


def test_a_table_created_meanwhile_is_refused(tmp_path: Path) -> None:
    write_state(tmp_path, "public.t", [{"id": 1}])
    table = StateTable(tmp_path, "public.t")
    files = table.new_files_dir(None)
    files.mkdir(parents=True)
    pq.write_table(pa.table({"id": [2]}), files / "part-0.parquet")
    with pytest.raises(StateError, match="another run created the state table"):
        table.commit(files, '{"type":"struct","fields":[]}', None, {}, {})
