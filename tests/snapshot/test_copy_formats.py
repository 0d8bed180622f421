"""The engine reads every column type: a table whose columns the driver decodes and one with columns
selected as the server's text land the same READ rows for the same values."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdc_backfill.landing.layout import snapshot_dir
from cdc_backfill.snapshot.engine import SnapshotEngine
from tests.support.cli import cli, ok
from tests.support.pg import plain_url, send, sql

pytestmark = pytest.mark.pg

COLUMNS = (
    "id bigint PRIMARY KEY, name text, amount numeric(12,2), at timestamptz, ok boolean, raw bytea, doc jsonb,"
    " u uuid, code character(3)"
)
VALUES = (
    "SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'n ' || i || ', \"q\"' END, i * 0.01 - 5,"
    " timestamptz '2026-11-28 00:00:00+00' - i * interval '1 minute', i % 3 = 0, decode(md5(i::text), 'hex'),"
    " jsonb_build_object('i', i), md5(i::text)::uuid, 'c' || (i % 10) FROM generate_series(1, 1000) i"
)


def _read(landing: Path, collection: str) -> pa.Table:
    files = sorted(snapshot_dir(landing, collection).glob("*.parquet"))
    table = pa.concat_tables(pq.read_table(f) for f in files)
    return table.drop_columns([c for c in table.column_names if c.startswith("_cdc_")]).sort_by("id")


def test_decoded_and_text_columns_land_the_same_read_rows(fresh_db: str, tmp_path: Path) -> None:
    sql(
        fresh_db,
        f"CREATE TABLE plain ({COLUMNS})",
        f"CREATE TABLE mixed ({COLUMNS}, tags text[], span interval)",  # these two: the server's text
        f"INSERT INTO plain {VALUES}",
        f"INSERT INTO mixed {VALUES.replace(' FROM', ', ARRAY[i::text, NULL], make_interval(secs => i) FROM')}",
    )
    landing = tmp_path / "landing"
    send(fresh_db, "public.plain", "public.mixed", chunk_size=97)
    SnapshotEngine(fresh_db, landing).run()
    plain, mixed = _read(landing, "public.plain"), _read(landing, "public.mixed")
    assert plain.num_rows == 1000
    assert mixed.select(plain.column_names).equals(plain)
    assert mixed.column("tags").to_pylist()[:2] == ["{1,NULL}", "{2,NULL}"]
    assert mixed.column("span").to_pylist()[:2] == ["00:00:01", "00:00:02"]


def test_a_value_the_lake_cannot_hold_fails_the_collection_with_a_condition_that_works_as_printed(
    fresh_db: str, tmp_path: Path
) -> None:
    sql(
        fresh_db,
        "CREATE TABLE t (id bigint PRIMARY KEY, at timestamptz, amount numeric(9,2))",
        "INSERT INTO t SELECT i, timestamptz '2026-11-28 00:00:00+00', i FROM generate_series(1, 300) i",
        "UPDATE t SET at = NULL WHERE id = 7",
        "UPDATE t SET at = 'infinity' WHERE id = 100",
        "UPDATE t SET amount = 'NaN' WHERE id = 200",
    )
    src = ("--source", plain_url(fresh_db))
    ok(cli(tmp_path, "signal", "init", *src))
    ok(cli(tmp_path, "signal", "execute-snapshot", *src, "--collections", "public.t"))
    failed = cli(tmp_path, "snapshot", "run", "--once", *src, "--landing", "lake")
    # each value named with a condition to leave its rows out, which works as printed: the timestamp's
    # first (id 100 is read before id 200), then, with it, the numeric's
    at = _condition(failed, "at")
    ok(cli(tmp_path, "signal", "execute-snapshot", *src, "--collections", "public.t", "--condition", at))
    amount = _condition(cli(tmp_path, "snapshot", "run", "--once", *src, "--landing", "lake2"), "amount")
    both = f"({at}) AND ({amount})"
    ok(cli(tmp_path, "signal", "execute-snapshot", *src, "--collections", "public.t", "--condition", both))
    ok(cli(tmp_path, "snapshot", "run", "--once", *src, "--landing", "lake3"))
    ids = set(_read(tmp_path / "lake3", "public.t").column("id").to_pylist())
    assert ids == set(range(1, 301)) - {100, 200}, "every other row, the NULL timestamp's too"


def _condition(res: subprocess.CompletedProcess[str], column: str) -> str:
    """The condition a failed snapshot's message gives for ``column``."""
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    said = re.search(rf'column {column}: [^\n]*--condition "([^"]+)"', res.stderr)
    assert said, (column, res.stderr[-2000:])
    return said.group(1)
