"""How a signal's patterns find tables, and how they are written so that Debezium's connector finds the
same ones: on SQL Server it matches database.schema.table (its IncrementalSnapshotIT names dbo tables
``testDB1.dbo.a``); PostgreSQL's connector matches schema.table."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from cdc_backfill.signals.model import AdditionalCondition, SignalError, execute_snapshot, stop_snapshot
from cdc_backfill.signals.reflect import qualifying_database
from cdc_backfill.signals.source_tables import Catalog, TableInfo
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.signals.validate import validate

TABLES = (
    TableInfo("dbo", "orders", ("id", "status"), ("id",)),
    TableInfo("dbo", "order_lines", ("id", "line"), ("id", "line")),
    TableInfo("sales", "orders", ("id",), ("id",)),
)
MSSQL = Catalog("mssql", TABLES, "cdc")
PG = Catalog("postgresql", TABLES)


@pytest.mark.parametrize(
    ("pattern", "written"),
    [
        ("dbo\\.orders", "cdc\\.dbo\\.orders"),
        ("dbo.orders", "cdc\\.dbo.orders"),
        ("dbo\\.order.*", "cdc\\.dbo\\.order.*"),
        ("dbo\\.orders|sales\\.orders", "cdc\\.(?:dbo\\.orders|sales\\.orders)"),
        ("^dbo\\.orders$", "cdc\\.dbo\\.orders"),  # anchors would match nothing after the database
        ("cdc\\.dbo\\.orders", "cdc\\.dbo\\.orders"),  # named as Debezium names it already
        (".*\\.orders", ".*\\.orders"),  # matches the whole names too
    ],
)
def test_sql_server_patterns_are_written_with_the_database_debezium_matches(
    pattern: str, written: str
) -> None:
    assert MSSQL.for_debezium(pattern) == written
    # the written pattern finds, among Debezium's names, exactly the tables the pattern found
    found = MSSQL.match(pattern)
    assert found
    debezium_names = [f"cdc.{t.collection}" for t in TABLES]
    assert sorted(n[len("cdc.") :] for n in debezium_names if re.fullmatch(written, n)) == found
    assert MSSQL.match(written) == found  # and the native engine reads the written form alike


def test_postgresql_patterns_are_written_as_given() -> None:
    assert PG.for_debezium("dbo\\.orders") == "dbo\\.orders"
    assert PG.match("cdc\\.dbo\\.orders") == []


def test_a_whole_signal_is_written_for_debezium_conditions_and_stops_too() -> None:
    sig = execute_snapshot(
        "s1", ["dbo\\.orders", "sales\\.orders"], conditions=(AdditionalCondition("dbo\\.orders", "id > 5"),)
    )
    out = MSSQL.signal_for_debezium(sig)
    assert out.collections == ("cdc\\.dbo\\.orders", "cdc\\.sales\\.orders")
    assert out.conditions == (AdditionalCondition("cdc\\.dbo\\.orders", "id > 5"),)
    plans = {p.collection: p.condition for p in validate(out, MSSQL).plans}
    assert plans == {"dbo.orders": "id > 5", "sales.orders": None}
    assert MSSQL.signal_for_debezium(stop_snapshot("s2", ["dbo\\.orders"])).collections == (
        "cdc\\.dbo\\.orders",
    )
    assert PG.signal_for_debezium(sig) is sig


def test_a_pattern_matching_nothing_is_refused_naming_both_forms() -> None:
    with pytest.raises(SignalError, match=r"whole schema.table or cdc.schema.table name\); did you mean"):
        MSSQL.match_or_refuse("dbo\\.ordres")


def test_the_store_writes_the_signal_debezium_reads_and_the_catalog_names_the_urls_database() -> None:
    store = SignalStore("mssql://sa:pw@127.0.0.1:1/cdc")  # not connected: the catalog is given
    validated = store.check(execute_snapshot("s1", ["dbo\\.orders"]), MSSQL)
    assert validated.collections == ("dbo.orders",)
    assert validated.signal.data_dict()["data-collections"] == ["cdc\\.dbo\\.orders"]
    assert qualifying_database(store.sa_engine) == "cdc"
    assert qualifying_database(sa.create_engine("postgresql+psycopg2://u@h/db")) is None
