"""The demo's pure parts: the seed SQL and the closing summary (the whole demo is `make demo`)."""

from __future__ import annotations

from cdc_backfill.demo import TABLES, Figures, seed_sql, summary_rows


def test_seed_fills_both_tables_with_half_the_rows_each() -> None:
    sql = seed_sql(200_000)
    assert len(sql) == 2 and all("generate_series(1, 100000)" in s for s in sql)


def test_summary_says_verified_only_when_every_range_is_equal() -> None:
    f = Figures(rows=10, chunks=3, snapshot_rows=10, seconds={"snapshot": 2.0, "reconcile": 4.0})
    f.reconcile = {
        "events": 7,
        "quarantined": 0,
        "collections": {TABLES[0]: {"reads_dropped": 1, "reads_applied": 9}},
    }
    f.verified = {TABLES[0]: {"all_equal": True, "ranges": 16, "equal": 16, "rows": 10},
                  TABLES[1]: {"all_equal": False, "ranges": 16, "equal": 15, "rows": 5}}  # fmt: skip
    lines = dict(summary_rows(f))
    assert lines["READs applied / dropped"].startswith("9 / 1")
    assert lines[f"verify {TABLES[0]}"].startswith("equal: 16/16")
    assert lines[f"verify {TABLES[1]}"].startswith("DIFFERENT: 15/16")
    assert lines["total time"] == "6.0 s"
