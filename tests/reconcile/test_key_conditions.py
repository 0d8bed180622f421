"""A snapshot's condition read as comparisons of key columns with constants, or refused with the reason
(pure): the phantom rule removes rows only where the state selects exactly what the source did."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.key_conditions import (
    AllOf,
    AnyOf,
    Compare,
    Inexact,
    IsNull,
    Negate,
    key_condition,
)
from cdc_backfill.verify.ranges import Bound
from cdc_backfill.verify.sql import range_predicate

ID = PgColumn("id", "integer", 23)
NAME = PgColumn("name", "text", 25)
AMOUNT = PgColumn("amount", "numeric(12,2)", 1700)
DAY = PgColumn("day", "date", 1082)
UID = PgColumn("u", "uuid", 2950)


def test_comparisons_of_key_columns_with_constants() -> None:
    got = key_condition("id > 5 AND (id <= 10 OR id IN (20, -3)) AND NOT id = 7", "postgresql", [ID])
    assert got == AllOf((
        AllOf((
            Compare("id", ">", 5),
            AnyOf((Compare("id", "<=", 10), AnyOf((Compare("id", "=", 20), Compare("id", "=", -3))))),
        )),
        Negate(Compare("id", "=", 7)),
    ))  # fmt: skip
    assert key_condition("10 < ID", "postgresql", [ID]) == Compare("id", ">", 10)  # flipped, any case
    assert key_condition("id BETWEEN 1 AND 3", "postgresql", [ID]) == AllOf(
        (Compare("id", ">=", 1), Compare("id", "<=", 3))
    )
    assert key_condition("id IS NULL", "postgresql", [ID]) == IsNull("id")
    assert key_condition("amount >= CAST('1.50' AS numeric(12,2))", "postgresql", [AMOUNT]) == Compare(
        "amount", ">=", Decimal("1.50")
    )
    assert key_condition("day < '2024-02-01'", "postgresql", [DAY]) == Compare(
        "day", "<", dt.date(2024, 2, 1)
    )
    u = "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"
    assert key_condition(f"u = '{u}'", "postgresql", [UID]) == Compare("u", "=", u.lower())


def test_row_values_compare_lexicographically() -> None:
    got = key_condition("(id, name COLLATE \"C\") > (1, 'b')", "postgresql", [ID, NAME])
    assert got == AnyOf((Compare("id", ">", 1), AllOf((Compare("id", "=", 1), Compare("name", ">", "b")))))
    got = key_condition("(id, name) = (1, 'b')", "postgresql", [ID, NAME])
    assert got == AllOf((Compare("id", "=", 1), Compare("name", "=", "b")))


def test_what_verify_repair_sends_is_read_exactly() -> None:
    for key in ([ID], [NAME], [ID, NAME], [AMOUNT]):
        lo = Bound(tuple("1" if c is not NAME else "apple" for c in key), ())
        hi = Bound(tuple("9" if c is not NAME else "pear" for c in key), ())
        condition = range_predicate(key, lo, hi)
        assert condition is not None
        key_condition(condition, "postgresql", key)  # no Inexact


@pytest.mark.parametrize(
    ("condition", "reason"),
    [
        ("status = 'open'", "status is not a key column"),
        ("name > 'b'", "text ordered by its collation"),
        ("name COLLATE \"de-DE-x-icu\" > 'b'", "orders text differently"),
        ("lower(name) = 'b'", "is not a key column"),
        ("id > (SELECT 1)", "is not a constant"),
        ("id + 1 > 3", "is not a key column"),
        ("id = 'x'", "is not a integer value"),
        ("id > 1 OR ts > '2024-01-01'", "ts is not a key column"),
    ],
)
def test_anything_else_is_refused_with_the_reason(condition: str, reason: str) -> None:
    with pytest.raises(Inexact, match=reason):
        key_condition(condition, "postgresql", [ID, NAME])


def test_a_key_spark_holds_differently_is_refused() -> None:
    ts = PgColumn("ts", "timestamp with time zone", 1184)
    with pytest.raises(Inexact, match="timestamp with time zone, which Spark does not hold"):
        key_condition("ts > '2024-01-01'", "postgresql", [ts])
    with pytest.raises(Inexact, match="not read"):
        key_condition("id = 1", "db2", [ID])
