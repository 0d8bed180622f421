"""The lake's path object on a real S3 server (moto's, a process): what every reader and writer calls,
behaving as a local ``Path`` does, and durable writes by kind of path."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

import pyarrow as pa
import pytest

from cdc_backfill.files import write_atomically, write_new, write_parquet
from cdc_backfill.lakepath import S3Path, lake_path, parquet_metadata, read_parquet, rmtree, same_file


def test_locations_become_path_objects() -> None:
    assert lake_path("s3://b/lake/") == S3Path("b", "lake") == lake_path("s3a://b/lake")
    assert isinstance(lake_path("lake"), Path) and lake_path("file:///data/lake") == Path("/data/lake")
    p = S3Path("b", "lake") / "log" / "r01.json"
    assert (str(p), p.name, p.stem, p.suffix) == ("s3://b/lake/log/r01.json", "r01.json", "r01", ".json")
    assert p.parent == S3Path("b", "lake/log") and p.relative_to(S3Path("b", "lake")) == PurePosixPath(
        "log/r01.json"
    )
    assert p.with_name("x.json") == S3Path("b", "lake/log/x.json")
    with pytest.raises(ValueError, match="is not under"):
        p.relative_to(S3Path("other", "lake"))


def test_same_file_matches_the_names_spark_and_delta_give() -> None:
    assert same_file("s3a://b/lake/state/v%3D1/part-0.parquet") == "s3://b/lake/state/v=1/part-0.parquet"
    assert same_file("file:/tmp/x/../y.parquet") == same_file("/tmp/y.parquet") == "/tmp/y.parquet"


def test_an_s3_folder_reads_and_writes_as_a_local_one(s3_lake: S3Path) -> None:
    root = s3_lake / "landing"
    assert not root.exists() and not root.is_dir() and list(root.iterdir()) == []
    root.mkdir(parents=True, exist_ok=True)  # nothing to make; the bucket exists
    write_atomically(root / "log" / "_schema.json", b"{}")
    assert write_new(root / "log" / "_rolls" / "r01.json", b'{"files": []}')
    assert not write_new(root / "log" / "_rolls" / "r01.json", b"other")  # If-None-Match: taken once
    assert (root / "log" / "_rolls" / "r01.json").read_text() == '{"files": []}'
    write_parquet(root / "log" / "t" / "v0001" / "p1.parquet", pa.table({"id": [1, 2, 3]}))
    assert root.is_dir() and (root / "log").is_dir() and (root / "log" / "_schema.json").is_file()
    assert [p.name for p in root.iterdir()] == ["log"]
    assert [p.name for p in root.glob("log/*/v*/p*.parquet")] == ["p1.parquet"]
    assert sorted(p.name for p in (root / "log").rglob("*.json")) == ["_schema.json", "r01.json"]
    part = root / "log" / "t" / "v0001" / "p1.parquet"
    assert read_parquet(part).num_rows == 3 == parquet_metadata(part).num_rows and part.stat().st_size > 0
    with (root / "log" / "_schema.json").open("rb") as fh:
        assert fh.read() == b"{}"
    moved = part.replace(root / "log" / "t" / "v0001" / "p2.parquet")
    assert moved.is_file() and not part.exists()
    (root / "log" / "_schema.json").unlink()
    (root / "log" / "_schema.json").unlink(missing_ok=True)
    with pytest.raises(FileNotFoundError):
        (root / "log" / "_schema.json").unlink()
    with pytest.raises(FileNotFoundError):
        (root / "log" / "_schema.json").read_bytes()
    rmtree(root)
    assert not root.exists()


def test_a_missing_bucket_is_said_at_mkdir(s3_env) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FileNotFoundError, match="no bucket no-such-bucket at the S3 endpoint"):
        S3Path("no-such-bucket", "lake").mkdir(parents=True, exist_ok=True)


def test_write_new_locally_takes_a_name_once(tmp_path: Path) -> None:
    assert write_new(tmp_path / "m.json", b"1") and not write_new(tmp_path / "m.json", b"2")
    assert (tmp_path / "m.json").read_bytes() == b"1" and [p.name for p in tmp_path.iterdir()] == ["m.json"]
