from __future__ import annotations

import pytest

from cdc_backfill.signals.conditions import check_condition
from cdc_backfill.signals.model import SignalError

COLUMNS = ("id", "status", "amount", "created_at", "Region")


@pytest.mark.parametrize(
    "condition",
    [
        "status = 'open'",
        "status = 'open' AND amount > 10",
        "(amount BETWEEN 1 AND 100) OR status IN ('a', 'b')",
        "lower(status) LIKE 'op%' AND NOT amount IS NULL",
        "created_at >= '2026-01-01' AND created_at < '2026-02-01'",
        "created_at >= TIMESTAMP '2026-01-01 00:00:00'",
        "amount * 2 + 1 > 10",
        "\"Region\" = 'EU'",
        "STATUS = 'x'",  # unquoted identifiers fold
        "status = '--not a comment'",
        "coalesce(amount, 0) > 0",
    ],
)
def test_single_predicates_are_accepted(condition: str) -> None:
    assert check_condition(condition, "postgresql", COLUMNS, "public.orders") == condition


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ("1=1; DROP TABLE customers", "contains ';'"),
        ("status = 'a' -- and more", "contains a comment"),
        ("status = 'a' /* x */", "contains a comment"),
        ("id IN (SELECT id FROM secrets)", "contains a subquery"),
        ("EXISTS (SELECT 1 FROM t)", "contains a subquery"),
        ("color = 'blue'", "unknown column 'color'"),
        ("color = blue", "unknown column 'color'"),
        ("status = open", "unknown column 'open' (a text value must be in single quotes)"),
        ("\"region\" = 'EU'", "unknown column 'region'"),
        ("pg_sleep(10) IS NULL", "calls pg_sleep(), which is not allowed"),
        ("amount", "is not a boolean predicate"),
        ("DROP TABLE customers", "is not a boolean predicate"),
        ("DELETE FROM customers", "is not a boolean predicate"),
        ("o.status = 'x'", "write bare column names"),
        ("", "is empty"),
        ("status = ", "not valid postgres SQL"),
    ],
)
def test_everything_else_is_refused_with_the_reason(condition: str, message: str) -> None:
    with pytest.raises(SignalError) as err:
        check_condition(condition, "postgresql", COLUMNS, "public.orders")
    assert message in str(err.value)
    assert "public.orders" in str(err.value)


@pytest.mark.parametrize("dialect", ["mssql", "oracle", "mysql"])
def test_other_dialects(dialect: str) -> None:
    assert check_condition("status = 'open' AND amount > 10", dialect, COLUMNS, "x.y")
    with pytest.raises(SignalError, match="contains ';'"):
        check_condition("1=1; DROP TABLE y", dialect, COLUMNS, "x.y")
    with pytest.raises(SignalError, match="subquery"):
        check_condition("id IN (SELECT id FROM z)", dialect, COLUMNS, "x.y")


@pytest.mark.parametrize(
    "condition",
    [
        "status COLLATE \"C\" > 'a' AND status COLLATE \"C\" <= 'm'",
        "(id, status COLLATE \"C\") <= (10, 'b')",
        "CAST(status AS TEXT) COLLATE \"C\" > ('a:' || 'b')",
    ],
)
def test_collate_is_accepted_for_byte_order_ranges(condition: str) -> None:
    # verify's repair conditions compare text keys by bytes, whatever the column's collation
    assert check_condition(condition, "postgresql", COLUMNS, "public.orders") == condition


@pytest.mark.parametrize(
    ("condition", "message"),
    [
        ('status COLLATE "C"', "is not a boolean predicate"),
        ('status COLLATE "C" > (SELECT max(status) FROM secrets)', "contains a subquery"),
        ("color COLLATE \"C\" > 'a'", "unknown column 'color'"),
    ],
)
def test_collate_does_not_open_other_doors(condition: str, message: str) -> None:
    with pytest.raises(SignalError, match=message.replace("(", r"\(")):
        check_condition(condition, "postgresql", COLUMNS, "public.orders")


@pytest.mark.parametrize("dialect", ["postgresql", "mssql", "oracle", "mysql"])
def test_an_unterminated_quote_is_named_with_the_whole_condition(dialect: str) -> None:
    with pytest.raises(SignalError) as err:
        check_condition("tier = 'gol", dialect, COLUMNS, "x.y")
    assert (
        str(err.value)
        == 'the condition for x.y is not valid SQL: a quote without its closing one: "tier = \'gol"'
    )
