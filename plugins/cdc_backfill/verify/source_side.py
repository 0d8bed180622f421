"""The source's side of verify: the table's shape, the range boundaries and the per-range counts and
hashes, read from PostgreSQL in one REPEATABLE READ transaction. The only module of the package that
does I/O; the statements come from :mod:`cdc_backfill.verify.sql`."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from cdc_backfill.names import split_collection
from cdc_backfill.pg.catalog import primary_key, table_columns
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.verify import VerifyError
from cdc_backfill.verify.compare import RangeStats
from cdc_backfill.verify.forms import visible
from cdc_backfill.verify.ranges import Bound, KeyRange, boundary_rows, key_ranges
from cdc_backfill.verify.sql import boundaries_sql, count_sql, settings_statements, stats_sql

if TYPE_CHECKING:
    from cdc_backfill.pg.exported import ExportedSnapshot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SourceTable:
    collection: str
    schema: str
    name: str
    columns: tuple[PgColumn, ...]  # the compared ones, in the table's order
    key: tuple[PgColumn, ...]  # the primary key, in its order


@dataclass(frozen=True)
class SourceSide:
    table: SourceTable
    ranges: list[KeyRange]
    stats: dict[int, RangeStats]


def _run(conn: sa.Connection, sql: str) -> list[tuple[Any, ...]]:
    """Rows of a statement, through the driver's cursor without parameters: a key written into the SQL
    may hold ``%``, which the driver would take for a placeholder if any parameters were given."""
    cur = conn.connection.cursor()
    try:
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()] if cur.description else []
    finally:
        cur.close()


def read_table(conn: sa.Connection, collection: str) -> SourceTable:
    schema, name = split_collection(collection)
    columns = list(table_columns(conn, schema, name))
    if not columns:
        raise VerifyError(f"{collection}: no such table in the source")
    pk = primary_key(conn, schema, name)
    if not pk:
        raise VerifyError(f"{collection} has no primary key: verify cuts ranges and matches rows by it")
    by_name = {c.name: c for c in columns}
    return SourceTable(collection, schema, name, tuple(visible(columns)), tuple(by_name[k] for k in pk))


def read_source(
    sa_engine: sa.Engine, collection: str, ranges: int, snapshot: ExportedSnapshot | None = None
) -> SourceSide:
    """Boundaries for ``ranges`` ranges and each range's row count and hash, from one snapshot: the one
    exported at an exact position when given (``pg.exported``), else the transaction's own."""
    with sa_engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn, conn.begin():
        if snapshot is not None:
            _run(conn, snapshot.import_statement())  # first: before any query of the transaction
        for stmt in settings_statements():
            _run(conn, stmt)
        table = read_table(conn, collection)
        count = int(_run(conn, count_sql(table.schema, table.name))[0][0])
        rows = boundary_rows(count, ranges)
        bounds: list[Bound] = []
        if rows:
            sql = boundaries_sql(table.schema, table.name, table.key, rows)
            for r in _run(conn, sql):
                bounds.append(Bound(tuple(r[0::2]), tuple(r[1::2])))
        cut = key_ranges(bounds)
        log.info("%s: %s rows, %s ranges", collection, count, len(cut))
        stats = _stats(conn, table, cut)
    return SourceSide(table, cut, stats)


def read_stats(sa_engine: sa.Engine, side: SourceSide) -> dict[int, RangeStats]:
    """The ranges of an earlier read counted and hashed again, now (a re-check: ``verify.recheck``)."""
    with sa_engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn, conn.begin():
        for stmt in settings_statements():
            _run(conn, stmt)
        return _stats(conn, side.table, side.ranges)


def _stats(conn: sa.Connection, table: SourceTable, cut: list[KeyRange]) -> dict[int, RangeStats]:
    sql = stats_sql(table.schema, table.name, table.columns, table.key, cut)
    return {int(r[0]): RangeStats(int(r[1]), int(r[2])) for r in _run(conn, sql)}
