"""A PostgreSQL table's columns and keys, read from the catalog: the one reader the snapshot engine,
verify and the tests' judge share (the capture learns columns from relation messages instead)."""

from __future__ import annotations

import sqlalchemy as sa

from cdc_backfill.pgtypes import PgColumn

COLUMNS_SQL = sa.text(
    """
    SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.atttypid AS oid,
           NOT a.attnotnull AS nullable
    FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = :schema AND c.relname = :table AND a.attnum > 0 AND NOT a.attisdropped
    ORDER BY a.attnum
    """
)
UNIQUE_SQL = sa.text(
    """
    SELECT array_agg(a.attname ORDER BY array_position(i.indkey, a.attnum)) AS cols
    FROM pg_index i
    JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
    WHERE n.nspname = :schema AND c.relname = :table AND i.indisunique AND i.indpred IS NULL
    GROUP BY i.indexrelid
    """
)
PK_SQL = sa.text(
    """
    SELECT a.attname FROM pg_index i
    JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
    WHERE n.nspname = :schema AND c.relname = :table AND i.indisprimary
    ORDER BY array_position(i.indkey, a.attnum)
    """
)


def table_columns(conn: sa.Connection, schema: str | None, table: str) -> tuple[PgColumn, ...]:
    """The table's columns in their order (none: no such table)."""
    rows = conn.execute(COLUMNS_SQL, {"schema": schema, "table": table})
    return tuple(PgColumn(r.name, r.type, int(r.oid), bool(r.nullable)) for r in rows)


def primary_key(conn: sa.Connection, schema: str | None, table: str) -> tuple[str, ...]:
    """The primary key's columns in index order (none: the table has no primary key)."""
    return tuple(r[0] for r in conn.execute(PK_SQL, {"schema": schema, "table": table}))


def unique_keys(conn: sa.Connection, schema: str | None, table: str) -> set[tuple[str, ...]]:
    """The column lists of the table's unique indexes without a predicate."""
    return {tuple(r.cols) for r in conn.execute(UNIQUE_SQL, {"schema": schema, "table": table})}
