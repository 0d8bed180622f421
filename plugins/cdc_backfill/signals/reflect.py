"""The source's catalog as signals see it (``signals.source_tables``), read through SQLAlchemy's inspector in
bulk: one round of queries per schema, whatever the number of tables."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from cdc_backfill.signals.source_tables import DATABASE_QUALIFIED, Catalog, TableInfo

SYSTEM_SCHEMAS = {
    "postgresql": {"pg_catalog", "information_schema", "pg_toast"},
    "mssql": {"sys", "INFORMATION_SCHEMA", "guest", "db_owner", "db_accessadmin", "db_securityadmin",
              "db_ddladmin", "db_backupoperator", "db_datareader", "db_datawriter", "db_denydatareader",
              "db_denydatawriter", "cdc"},
    "oracle": {"SYS", "SYSTEM", "OUTLN", "XDB", "MDSYS", "CTXSYS", "DBSNMP", "APPQOSSYS", "GSMADMIN_INTERNAL",
               "LOGMINER", "ORDSYS", "WMSYS", "OJVMSYS", "AUDSYS"},
    "mysql": {"mysql", "information_schema", "performance_schema", "sys"},
}  # fmt: skip


def read_catalog(sa_engine: sa.Engine) -> Catalog:
    """Every user table of the source with its columns and primary key (reflected in bulk)."""
    dialect = sa_engine.dialect.name
    insp = sa.inspect(sa_engine)
    skip = SYSTEM_SCHEMAS.get(dialect, set())
    tables: list[TableInfo] = []
    for schema in insp.get_schema_names():
        if schema in skip or schema.startswith("pg_temp") or schema.startswith("pg_toast"):
            continue
        columns = insp.get_multi_columns(schema=schema)
        pks = insp.get_multi_pk_constraint(schema=schema)
        uniques = insp.get_multi_unique_constraints(schema=schema)
        indexes = insp.get_multi_indexes(schema=schema)
        for (sch, table), cols in columns.items():
            pk = tuple((pks.get((sch, table)) or {}).get("constrained_columns") or ())
            single = _unique_column_sets(uniques.get((sch, table), []), indexes.get((sch, table), []))
            names = tuple(c["name"] for c in cols)
            unique = tuple(c for c in names if (c,) in single | {pk})
            nullable = tuple(c["name"] for c in cols if c.get("nullable", True))
            tables.append(TableInfo(sch or schema, table, names, pk, unique, nullable))
    return Catalog(dialect, tuple(sorted(tables, key=lambda t: t.collection)), qualifying_database(sa_engine))


def qualifying_database(sa_engine: sa.Engine) -> str | None:
    """The database Debezium's connector puts before schema.table on this source (None: it puts none).
    ``capture debezium`` gives the connector the database of the same URL."""
    return (sa_engine.url.database or None) if sa_engine.dialect.name in DATABASE_QUALIFIED else None


def _unique_column_sets(uniques: list[Any], indexes: list[Any]) -> set[tuple[str, ...]]:
    """The column sets a unique constraint or a unique index covers; a partial unique index leaves the
    other rows free to repeat, so it does not count."""
    return {tuple(u["column_names"]) for u in uniques} | {
        tuple(i["column_names"])
        for i in indexes
        if i.get("unique") and not (i.get("dialect_options") or {}).get("postgresql_where")
    }
