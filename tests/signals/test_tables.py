"""The signal table for every dialect, compiled by SQLAlchemy and parsed back by sqlglot."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from cdc_backfill.signals.conditions import SQLGLOT_DIALECTS
from cdc_backfill.signals.model import Signal
from cdc_backfill.signals.tables import ddl_statements, insert_statement

CASES = [("postgresql", "public"), ("mssql", "dbo"), ("oracle", None), ("mysql", None)]


@pytest.mark.parametrize(("dialect", "schema"), CASES)
def test_ddl_parses_back_with_debeziums_three_columns(dialect: str, schema: str | None) -> None:
    signal_ddl, status_ddl = ddl_statements(dialect, schema)
    tree = sqlglot.parse_one(signal_ddl, read=SQLGLOT_DIALECTS[dialect])
    assert isinstance(tree, exp.Create)
    table = tree.find(exp.Table)
    assert table.name == "cdc_signal"
    assert (table.db or None) == schema
    cols = {c.name: c for c in tree.find_all(exp.ColumnDef)}
    assert list(cols) == ["id", "type", "data"]
    lengths = {name: int(c.args["kind"].expressions[0].name) for name, c in cols.items()}
    assert lengths == {"id": 42, "type": 32, "data": 2048}
    assert any(isinstance(c, exp.PrimaryKey) for c in tree.find_all(exp.PrimaryKey))
    status = sqlglot.parse_one(status_ddl, read=SQLGLOT_DIALECTS[dialect])
    assert status.find(exp.Table).name == "cdc_signal_status"


@pytest.mark.parametrize(("dialect", "schema"), CASES)
def test_insert_parses_back_with_its_values(dialect: str, schema: str | None) -> None:
    signal = Signal(
        "sig-1", "execute-snapshot", ("public.orders",), "incremental", condition="status = 'open'"
    )
    sql = insert_statement(dialect, schema, signal.row())
    tree = sqlglot.parse_one(sql, read=SQLGLOT_DIALECTS[dialect])
    assert isinstance(tree, exp.Insert)
    assert [c.name for c in tree.this.expressions] == ["id", "type", "data"]
    assert tree.find(exp.Table).name == "cdc_signal"
    values = [v.this for v in tree.find(exp.Tuple).expressions]
    # the quote inside the condition survives the dialect's escaping, and the row reads back the same
    assert Signal.from_row(*values) == signal


def test_oracle_uses_varchar2_and_sqlserver_a_schema() -> None:
    assert "VARCHAR2(42 CHAR)" in ddl_statements("oracle", None)[0]
    assert ddl_statements("mssql", "dbo")[0].startswith("CREATE TABLE dbo.cdc_signal")
