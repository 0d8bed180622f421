"""The signal table (Debezium's three columns) and the project's status table, for every dialect.

Statuses live in a separate table so that the signal table stays exactly what Debezium reads.
DDL and statements are built here as SQLAlchemy objects; :func:`ddl_statements` compiles them for a
dialect (tests parse the SQL Server and Oracle output back with sqlglot).
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib

import sqlalchemy as sa
from sqlalchemy.schema import CreateTable

from cdc_backfill.names import split_collection
from cdc_backfill.signals.model import DATA_MAX, ID_MAX, TYPE_MAX

SIGNAL_TABLE = "cdc_signal"
# the snapshot engine's progress records, beside the signal table (the capture leaves it out of the stream)
PROGRESS_TABLE = "cdc_snapshot_progress"
STATUS_TABLE = "cdc_signal_status"
DEFAULT_SCHEMAS = {"postgresql": "public", "mssql": "dbo"}  # Oracle and MySQL: the connection's own
DEFAULT_SIGNAL_TABLE = f"public.{SIGNAL_TABLE}"  # where PostgreSQL users find it unless told

DIALECTS = ("postgresql", "mssql", "oracle", "mysql")


@functools.cache
def sql_dialect(name: str, driver: str | None = None) -> sa.engine.Dialect:
    """The SQLAlchemy dialect ``name`` (one of ``DIALECTS``), through ``driver`` if given, imported when
    first asked: importing all four took a tenth of a second of every command's start, most of which
    use one."""
    if name not in DIALECTS:
        raise ValueError(f"no SQL dialect {name!r}: one of {', '.join(DIALECTS)}")
    module = f"sqlalchemy.dialects.{name}" + (f".{driver}" if driver else "")
    return importlib.import_module(module).dialect()


def utc_now() -> dt.datetime:
    """The time written into the bookkeeping tables' DateTime columns: UTC, without a zone."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def split_name(name: str) -> tuple[str | None, str]:
    """``schema.table`` -> (schema, table); a bare ``table`` -> (None, table) (``names.split_collection``)."""
    return split_collection(name)


def signal_tables(schema: str | None, signal_name: str = SIGNAL_TABLE) -> tuple[sa.Table, sa.Table]:
    """(signal table, status table) in ``schema``; the status table sits beside the signal table."""
    md = sa.MetaData(schema=schema)
    signal = sa.Table(
        signal_name,
        md,
        sa.Column("id", sa.String(ID_MAX), primary_key=True),
        sa.Column("type", sa.String(TYPE_MAX), nullable=False),
        sa.Column("data", sa.String(DATA_MAX)),
    )
    status = sa.Table(
        STATUS_TABLE if signal_name == SIGNAL_TABLE else f"{signal_name}_status",
        md,
        sa.Column("signal_id", sa.String(ID_MAX), primary_key=True),
        sa.Column("type", sa.String(TYPE_MAX), nullable=False),
        sa.Column("collections", sa.String(DATA_MAX)),  # JSON list of the resolved collections
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.String(DATA_MAX)),
        sa.Column("progress", sa.String(4000)),  # JSON, written by the engine
        sa.Column("received_at", sa.DateTime(timezone=False)),
        sa.Column("updated_at", sa.DateTime(timezone=False)),
    )
    return signal, status


def ddl_statements(dialect_name: str, schema: str | None, signal_name: str = SIGNAL_TABLE) -> list[str]:
    """CREATE TABLE statements for both tables, compiled for ``dialect_name``."""
    dialect = sql_dialect(dialect_name)
    return [str(CreateTable(t).compile(dialect=dialect)).strip() for t in signal_tables(schema, signal_name)]


def insert_statement(
    dialect_name: str, schema: str | None, row: dict[str, str | None], signal_name: str = SIGNAL_TABLE
) -> str:
    """The INSERT of one signal row with its values inlined, compiled for ``dialect_name``.

    For operators who insert signals by hand or from their own tools; the CLI itself binds parameters.
    """
    signal, _ = signal_tables(schema, signal_name)
    stmt = sa.insert(signal).values(**row)
    return str(
        stmt.compile(dialect=sql_dialect(dialect_name), compile_kwargs={"literal_binds": True})
    ).strip()
