"""The repair condition through the real snapshot engine: it reads exactly the rows of the chosen ranges,
text keys with quotes, colons and percent signs included."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from cdc_backfill.signals.store import SignalStore
from cdc_backfill.snapshot.engine import SnapshotEngine
from cdc_backfill.verify.repair import repair_signal
from cdc_backfill.verify.source_side import read_source
from cdc_backfill.verify.sql import range_case_sql

pytestmark = pytest.mark.pg

NASTY = ["a:b", "a :b", "100%", "it's", "x\\:y", "Zed", "zed", "émile", "", ":", "%(n)s", "😀"]


def nasty_words(url: str) -> sa.Engine:
    """``words (w, n)``: every nasty text with n = 1..5."""
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE words (w text, n int, v int, PRIMARY KEY (w, n))"))
        conn.execute(
            sa.text(
                "INSERT INTO words SELECT w, i, i FROM unnest(CAST(:w AS text[])) w, generate_series(1, 5) i"
            ),
            {"w": NASTY},
        )
    return engine


@pytest.mark.parametrize("differing", [[1, 4], [0, 5], [2], [3, 5], [2, 3, 4]])
def test_the_repair_signal_reads_exactly_the_differing_ranges(
    fresh_db: str, tmp_path: Path, differing: list[int]
) -> None:
    engine = nasty_words(fresh_db)
    source = read_source(engine, "public.words", 6)
    assert len(source.ranges) == 6
    # the nasty keys are boundaries, so they are written into the conditions (text keys in byte order)
    assert [r.hi.sql for r in source.ranges if r.hi] == [
        ("%(n)s", "5"),
        (":", "5"),
        ("a :b", "5"),
        ("it's", "5"),
        ("zed", "5"),
    ]
    repair = repair_signal("public.words", source.table.key, source.ranges, differing)
    assert repair.scope == "ranges"
    store = SignalStore(fresh_db)
    store.init()
    store.send(repair.signal)  # validated like any operator's signal
    SnapshotEngine(fresh_db, tmp_path, readers=2).run()
    assert {v.status for v in SignalStore(fresh_db).list()} == {"done"}

    landed = Counter(
        (r["w"], r["n"])
        for f in (tmp_path / "snapshots" / "public.words").glob("*.parquet")
        for r in pq.read_table(f).to_pylist()
    )
    wanted = ", ".join(map(str, differing))
    case = range_case_sql(source.table.key, source.ranges)
    with engine.connect() as conn:
        expected = {
            (r.w, r.n)
            for r in conn.exec_driver_sql(
                f"SELECT w, n FROM (SELECT w, n, {case.replace('%', '%%')} AS r FROM words) s WHERE r IN ({wanted})"
            )
        }
    engine.dispose()
    assert set(landed) == expected and set(landed.values()) == {1}
    assert len(expected) == sum(source.stats[i].rows for i in differing)


@pytest.mark.spark
def test_the_state_selects_exactly_the_keys_the_repair_condition_reads(fresh_db: str, spark) -> None:  # type: ignore[no-untyped-def]
    """The phantom rule evaluates the repair's condition on the state: for text keys in byte order, with
    quotes, colons and percent signs, Spark selects the same keys as PostgreSQL."""
    from cdc_backfill.reconcile.key_conditions import key_condition
    from cdc_backfill.reconcile.spark.phantoms import condition_column

    engine = nasty_words(fresh_db)
    source = read_source(engine, "public.words", 6)
    every = spark.createDataFrame([(w, n) for w in NASTY for n in range(1, 6)], "w string, n int")
    for differing in ([1, 4], [0, 5], [2], [3, 5]):
        repair = repair_signal("public.words", source.table.key, source.ranges, differing)
        assert repair.condition is not None
        with engine.connect() as conn:
            want = {
                (r.w, r.n)
                for r in conn.exec_driver_sql(
                    f"SELECT w, n FROM words WHERE {repair.condition.replace('%', '%%')}"
                )
            }
        column = condition_column(key_condition(repair.condition, "postgresql", source.table.key))
        got = {(r.w, r.n) for r in every.where(column).collect()}
        assert got == want and want
    engine.dispose()
