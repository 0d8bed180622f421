"""Chunk SQL for every dialect, compiled by SQLAlchemy and parsed back by sqlglot."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from cdc_backfill.signals.conditions import SQLGLOT_DIALECTS
from cdc_backfill.snapshot.sql import (
    ChunkTable,
    boundary_select,
    chunk_select,
    compile_sql,
    count_select,
    driver_dialect,
    max_key_select,
    sample_keys_select,
)
from tests.support.imports import modules_after

COMPOSITE = ChunkTable(
    "sales", "lines", ("order_id", "line_no", "qty"), ("order_id", "line_no"), ("bigint", "integer")
)
SINGLE = ChunkTable("public", "orders", ("id", "status"), ("id",), ("bigint",))


def parse(sql: str, dialect: str) -> exp.Expression:
    glot = SQLGLOT_DIALECTS[dialect]
    for name in ("lo0", "lo1", "hi0", "hi1"):  # placeholders as sqlglot reads them
        sql = sql.replace(f"%({name})s", f":{name}")
    return sqlglot.parse_one(sql, read=glot)


@pytest.mark.parametrize("dialect", ["postgresql", "mssql", "oracle"])
def test_chunk_sql_parses_back_with_limit_order_and_condition(dialect: str) -> None:
    sql = compile_sql(
        chunk_select(
            COMPOSITE, dialect, after=True, upto=True, limit=500, condition="qty > 1", key_text=True
        ),
        dialect,
    )
    tree = parse(sql, dialect)
    assert isinstance(tree, exp.Select)
    assert [o.this.name for o in tree.args["order"].expressions] == ["order_id", "line_no"]
    where = tree.args["where"].sql(dialect=SQLGLOT_DIALECTS[dialect])
    assert "qty > 1" in where
    if dialect == "postgresql":
        assert tree.args["limit"].expression.name == "500"
        assert "(sales.lines.order_id, sales.lines.line_no) >" in sql  # a row-value comparison
    if dialect == "mssql":
        assert sql.startswith("SELECT TOP 500 ")
        assert tree.args["limit"].expression.name == "500"
    if dialect == "oracle":
        assert "FETCH FIRST 500 ROWS ONLY" in sql
    if dialect in ("mssql", "oracle"):
        # no row values: the expanded form, and every key value cast back to the key column's type
        assert (
            "sales.lines.order_id > CAST(:lo0 AS bigint) OR sales.lines.order_id = CAST(:lo0 AS bigint) AND sales.lines.line_no > CAST(:lo1 AS integer)"
            in sql
        )
        assert "sales.lines.line_no <= CAST(:hi1 AS integer)" in sql
        assert not list(tree.find_all(exp.Tuple))


@pytest.mark.parametrize("dialect", ["postgresql", "mssql", "oracle"])
def test_first_chunk_has_no_lower_bound(dialect: str) -> None:
    sql = compile_sql(chunk_select(SINGLE, dialect, after=False, upto=True, limit=10), dialect)
    tree = parse(sql, dialect)
    assert ":lo0" not in sql and "lo0" not in sql
    assert "hi0" in tree.sql()


@pytest.mark.parametrize("dialect", ["postgresql", "mssql", "oracle"])
def test_max_key_and_boundaries_read_keys_only(dialect: str) -> None:
    for stmt in (
        max_key_select(COMPOSITE, dialect),
        boundary_select(COMPOSITE, dialect, after=True, step=1000),
    ):
        tree = parse(compile_sql(stmt, dialect), dialect)
        selected = [c.sql() for c in tree.expressions]
        assert len(selected) == 2 and "qty" not in " ".join(selected)


def test_a_sample_of_keys_reads_keys_only_from_sampled_pages_up_to_the_largest() -> None:
    sql = compile_sql(sample_keys_select(COMPOSITE, "postgresql", 2.5), "postgresql")
    tree = parse(sql, "postgresql")
    assert len(tree.expressions) == 2 and "qty" not in " ".join(c.sql() for c in tree.expressions)
    assert "TABLESAMPLE system(2.500000)" in sql and "hi1" in sql and "ORDER BY" in sql
    with pytest.raises(ValueError, match="PostgreSQL only"):
        sample_keys_select(COMPOSITE, "mssql", 2.5)


def test_nullable_chunk_column_reads_nulls_in_a_chunk_of_their_own() -> None:
    t = ChunkTable("public", "events", ("id", "batch"), ("batch",), ("integer",), nullable_key=True)
    keyed = compile_sql(chunk_select(t, "postgresql", after=True, upto=True, limit=5), "postgresql")
    assert "public.events.batch IS NOT NULL" in keyed
    nulls = compile_sql(
        chunk_select(t, "postgresql", after=False, upto=False, limit=None, null_keys=True), "postgresql"
    )
    assert "public.events.batch IS NULL" in nulls
    assert "LIMIT" not in nulls


def test_a_colon_in_a_condition_is_text_not_a_bind_parameter() -> None:
    stmt = chunk_select(
        COMPOSITE, "postgresql", after=False, upto=False, limit=10, condition="note = 'a :b' AND qty::int > 1"
    )
    sql = compile_sql(stmt, "postgresql")
    assert "note = 'a :b' AND qty::int > 1" in sql
    assert "b" not in stmt.compile().params


@pytest.mark.parametrize("dialect", ["postgresql", "mssql", "oracle"])
def test_the_rows_a_condition_selects_are_counted_for_the_progress(dialect: str) -> None:
    sql = compile_sql(count_select(SINGLE, "status = 'a:b'"), dialect)
    tree = parse(sql, dialect)
    assert isinstance(tree, exp.Select) and "count(" in sql.lower()
    assert tree.args["where"].sql(dialect=SQLGLOT_DIALECTS[dialect]) == "WHERE (status = 'a:b')"
    assert "WHERE" not in compile_sql(count_select(SINGLE), dialect)


def test_a_postgresql_run_loads_no_other_dialect_and_no_sql_parser() -> None:
    """The engine and the command line compile for the other dialects only when asked, and parse a
    condition only when a signal has one: importing all four dialects, and sqlglot, each took about a
    tenth of a second of every command's start."""
    loaded = modules_after(
        "import cdc_backfill.cli, cdc_backfill.snapshot.engine, cdc_backfill.signals.tables"
    )
    assert not {
        m for m in loaded if m.startswith(("sqlalchemy.dialects.mssql", "sqlalchemy.dialects.oracle"))
    }
    assert not {m for m in loaded if m.startswith("sqlalchemy.dialects.mysql")}
    assert "sqlglot" not in loaded
    assert driver_dialect("mssql").driver == "pymssql"
    with pytest.raises(ValueError, match="no SQL dialect 'sqlite'"):
        driver_dialect("sqlite")
