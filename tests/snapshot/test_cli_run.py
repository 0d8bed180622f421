"""``cdc-backfill snapshot run --once`` as typed: a run in which a collection failed exits non-zero and
names it with the reason; a run that read everything exits 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import cli, ok, snapshot_as_typed
from tests.support.pg import plain_url, sql

pytestmark = [pytest.mark.pg, pytest.mark.slow]


def test_a_failed_collection_fails_the_run(fresh_db: str, tmp_path: Path) -> None:
    url = plain_url(fresh_db)
    sql(
        fresh_db,
        "CREATE TABLE good (id int PRIMARY KEY)",
        "INSERT INTO good SELECT generate_series(1, 10)",
        "CREATE TABLE doomed (id int PRIMARY KEY)",
    )
    assert cli(tmp_path, "signal", "init", "--source", url).returncode == 0
    for table in ("good", "doomed"):
        res = cli(tmp_path, "signal", "execute-snapshot", "--source", url, "--collections", f"public.{table}")
        assert res.returncode == 0, res.stderr
    sql(fresh_db, "DROP TABLE doomed")  # gone between the signal and the engine: it cannot be read

    res = cli(tmp_path, "snapshot", "run", "--once", "--source", url, "--landing", "lake")
    assert res.returncode == 1, (res.stdout, res.stderr)
    failed = [line for line in res.stderr.splitlines() if "public.doomed failed" in line]
    assert len(failed) == 1 and "doomed" in failed[0].split("failed: ", 1)[1], res.stderr
    assert "public.good failed" not in res.stderr
    assert len(list((tmp_path / "lake" / "snapshots" / "public.good").glob("*.parquet"))) >= 1

    again = cli(tmp_path, "snapshot", "run", "--once", "--source", url, "--landing", "lake")
    assert again.returncode == 0, again.stderr  # nothing new failed in this run


def test_a_conditioned_snapshot_counts_the_rows_its_condition_selects(fresh_db: str, tmp_path: Path) -> None:
    url = plain_url(fresh_db)
    sql(
        fresh_db,
        "CREATE TABLE tiers (id int PRIMARY KEY, tier text)",
        "INSERT INTO tiers SELECT i, CASE WHEN i % 4 = 0 THEN 'gold' ELSE 'basic' END FROM generate_series(1, 400) i",
    )
    snapshot_as_typed(
        tmp_path,
        url,
        [
            "--collections",
            "public.tiers",
            "--condition",
            "tier::text = 'gold' AND id % 1 = 0",
            "--chunk-size",
            "30",
        ],
    )
    [status] = json.loads(ok(cli(tmp_path, "snapshot", "status", "--source", url, "--json")))
    # its progress's 100% is the 100 gold rows, not the table's 400
    assert (status["status"], status["rows"], status["rows_estimate"]) == ("done", 100, 100), status


@pytest.mark.parametrize("choice", ["auto", "zstd"])
def test_chunk_files_are_compressed_as_chosen_and_keep_their_keys_range(
    fresh_db: str, tmp_path: Path, choice: str
) -> None:
    """A local landing takes its chunk files uncompressed unless told; either way the footer keeps the
    key's least and greatest value (the reconcile's chunk spans) and no other column's."""
    import pyarrow.parquet as pq

    url = plain_url(fresh_db)
    sql(
        fresh_db,
        "CREATE TABLE t (id int PRIMARY KEY, v text)",
        "INSERT INTO t SELECT i, 'v' || i FROM generate_series(1, 30) i",
    )
    ok(cli(tmp_path, "signal", "init", "--source", url))
    ok(
        cli(
            tmp_path,
            "signal",
            "execute-snapshot",
            "--source",
            url,
            "--collections",
            "public.t",
            "--chunk-size",
            "10",
        )
    )
    ok(cli(tmp_path, "snapshot", "run", "--source", url, "--landing", "lake", "--chunk-compression", choice))
    files = sorted((tmp_path / "lake" / "snapshots" / "public.t").glob("*.parquet"))
    footers = [m for m in (pq.ParquetFile(f).metadata for f in files) if m.num_rows]  # the last one: empty
    assert len(footers) == 3
    ranges = []
    for footer in footers:
        columns = footer.row_group(0)
        by_name = {columns.column(i).path_in_schema: columns.column(i) for i in range(columns.num_columns)}
        assert {c.compression for c in by_name.values()} == {"UNCOMPRESSED" if choice == "auto" else "ZSTD"}
        assert [n for n, c in by_name.items() if c.is_stats_set] == ["id"]
        ranges.append((by_name["id"].statistics.min, by_name["id"].statistics.max))
    assert sorted(ranges) == [(1, 10), (11, 20), (21, 30)]


def test_a_chunk_compression_it_does_not_know_is_refused(tmp_path: Path) -> None:
    res = cli(tmp_path, "snapshot", "run", "--landing", "lake", "--chunk-compression", "zst")
    assert res.returncode == 2 and "invalid choice: 'zst'" in res.stderr and "Traceback" not in res.stderr
