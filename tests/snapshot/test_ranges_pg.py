"""Cutting a table's keys into ranges against a real PostgreSQL: from a sample of its pages, and by
stepping through its keys where the sample is too small."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
import sqlalchemy as sa

from cdc_backfill.snapshot import range_plan as ranges_module
from cdc_backfill.snapshot.range_plan import plan_ranges, table_pages
from cdc_backfill.snapshot.sql import ChunkTable
from tests.support.pg import sql

pytestmark = pytest.mark.pg


def cut(
    url: str, ct: ChunkTable, readers: int, chunk_size: int = 1000
) -> list[tuple[int, list[str] | None, list[str] | None]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return plan_ranges(conn, ct, "postgresql", readers, chunk_size).ranges
    finally:
        engine.dispose()


def range_of(key: tuple[int, int], ranges: list, as_key) -> int:  # type: ignore[no-untyped-def,type-arg]
    """The range a key falls in: after its start, up to its end (keys compared as numbers: the test's
    keys are integers, so Python's order is the database's)."""
    hits = [no for no, lo, hi in ranges if (lo is None or key > as_key(lo)) and key <= as_key(hi)]
    assert len(hits) == 1, (key, ranges)
    return hits[0]


def test_ranges_cut_from_a_sample_are_contiguous_and_near_even(
    fresh_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ranges_module, "stepped_bounds", None)  # the sample must cut these
    sql(
        fresh_db,
        "CREATE TABLE lines (order_id bigint, line_no int, qty int, PRIMARY KEY (order_id, line_no))",
        "INSERT INTO lines SELECT i / 4, i % 4, i FROM generate_series(0, 199999) i",
    )
    ct = ChunkTable(
        "public", "lines", ("order_id", "line_no", "qty"), ("order_id", "line_no"), ("bigint", "integer")
    )
    engine = sa.create_engine(fresh_db)
    with engine.connect() as conn:  # a table not partitioned has no partition tree: its own pages
        assert table_pages(conn, ct) > 1000
    engine.dispose()
    ranges = cut(fresh_db, ct, readers=2)
    assert len(ranges) == 8 and ranges[0][1] is None and ranges[-1][2] == ["49999", "3"]
    for (_, _, end), (_, start, _) in itertools.pairwise(ranges):
        assert end == start  # each range starts after the one before ends
    sizes = Counter(
        range_of((i // 4, i % 4), ranges, lambda k: (int(k[0]), int(k[1]))) for i in range(200_000)
    )
    assert all(abs(size - 25_000) < 5_000 for size in sizes.values()), sizes


def test_a_table_too_small_to_sample_is_cut_by_stepping_through_its_keys(fresh_db: str) -> None:
    sql(fresh_db, "CREATE TABLE few (id int PRIMARY KEY)", "INSERT INTO few SELECT generate_series(1, 300)")
    few = ChunkTable("public", "few", ("id",), ("id",), ("integer",))
    # 4 readers, chunks of 10: 16 ranges, and 300 keys are fewer than 20 a range
    ranges = cut(fresh_db, few, readers=4, chunk_size=10)
    assert [r[2] for r in ranges] == [[str(k)] for k in range(19, 300, 19)] + [["300"]]
    assert [r[1] for r in ranges[1:]] == [r[2] for r in ranges[:-1]]
    assert cut(fresh_db, few, readers=1) == [(0, None, ["300"])]


def test_a_partitioned_table_is_sampled_across_its_partitions_and_a_view_is_stepped(
    fresh_db: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="cdc_backfill.snapshot.range_plan")
    sql(
        fresh_db,
        "CREATE TABLE parted (id int PRIMARY KEY) PARTITION BY RANGE (id)",
        "CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (50000)",
        "CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (50000) TO (100000)",
        "INSERT INTO parted SELECT generate_series(0, 99999)",
        "CREATE VIEW parted_view AS SELECT * FROM parted",
    )
    engine = sa.create_engine(fresh_db)
    with engine.connect() as conn:  # the sample's share of pages is taken of the partitions' pages
        sizes = [
            table_pages(conn, ChunkTable("public", t, ("id",), ("id",), ("integer",)))
            for t in ("parted", "parted_1", "parted_2")
        ]
    engine.dispose()
    assert sizes[0] == sizes[1] + sizes[2] and sizes[1] > 100
    for name in ("parted", "parted_view"):  # a view cannot be sampled: its ranges are stepped
        ranges = cut(fresh_db, ChunkTable("public", name, ("id",), ("id",), ("integer",)), readers=2)
        assert len(ranges) == 8 and ranges[-1][2] == ["99999"], name
        ends = [int(r[2][0]) for r in ranges]
        assert ends == sorted(ends) and all(
            abs(b - a - 12_500) < 2_500 for a, b in itertools.pairwise([-1, *ends])
        )
    assert [r.getMessage().split(":")[0] for r in caplog.records if "no sample" in r.getMessage()] == [
        "parted_view"
    ]
