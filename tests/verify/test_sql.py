from __future__ import annotations

from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.verify.ranges import Bound, key_ranges
from cdc_backfill.verify.sql import (
    boundaries_sql,
    count_sql,
    range_case_sql,
    range_predicate,
    settings_statements,
    stats_sql,
)

ID = PgColumn("id", "bigint", 20)
W = PgColumn("w", "text", 25)
AMOUNT = PgColumn("amount", "numeric(12,2)", 1700)


def b(*values: str) -> Bound:
    return Bound(tuple(values), tuple(values))


def test_settings_are_local_to_the_transaction() -> None:
    stmts = settings_statements()
    assert "SET LOCAL TimeZone = 'UTC'" in stmts
    assert all(s.startswith("SET LOCAL ") for s in stmts)


def test_count_and_boundaries() -> None:
    assert count_sql("public", 'we"ird') == 'SELECT count(*) FROM "public"."we""ird"'
    sql = boundaries_sql("public", "t", [ID, W], [25, 50])
    assert 'row_number() OVER (ORDER BY "id", "w" COLLATE "C")' in sql
    assert 'CAST(k."id" AS TEXT) AS _cdc_s0, CAST(k."id" AS TEXT) AS _cdc_p0' in sql
    assert "WHERE k._cdc_rn IN (25, 50) ORDER BY k._cdc_rn" in sql
    ts = PgColumn("ts", "timestamp with time zone", 1184)
    assert 'extract(epoch FROM k."ts")' in boundaries_sql("public", "t", [ts], [1])  # Spark compares micros


def test_range_predicates_single_and_composite() -> None:
    assert range_predicate([ID], None, None) is None
    assert range_predicate([ID], b("10"), None) == '"id" > 10'
    assert range_predicate([ID], None, b("10")) == '"id" <= 10'
    assert range_predicate([ID], b("-5"), b("10")) == '"id" > -5 AND "id" <= 10'
    assert (
        range_predicate([ID, W], b("1", "x"), b("2", "o'k"))
        == '("id", "w" COLLATE "C") > (1, \'x\') AND ("id", "w" COLLATE "C") <= (2, \'o\'\'k\')'
    )


def test_case_assigns_the_range_whose_upper_bound_comes_first() -> None:
    ranges = key_ranges([b("10"), b("20")])
    assert range_case_sql([ID], ranges) == 'CASE WHEN "id" <= 10 THEN 0 WHEN "id" <= 20 THEN 1 ELSE 2 END'
    assert range_case_sql([ID], key_ranges([])) == "0"


def test_stats_sql_hashes_every_column_once() -> None:
    sql = stats_sql("public", "orders", [ID, W, AMOUNT], [ID], key_ranges([b("10")]))
    assert sql.count("_cdc_v") == 3 + 2 * 3  # defined once, used twice in its encoding
    assert "md5(convert_to(" in sql and "'UTF8'" in sql
    assert "AS bit(60)) AS bigint" in sql
    assert "CAST(coalesce(sum(_cdc_h), 0) AS TEXT)" in sql  # an exact numeric sum, as text
    assert 'FROM "public"."orders" OFFSET 0' in sql
    assert sql.endswith("GROUP BY _cdc_r ORDER BY _cdc_r")
