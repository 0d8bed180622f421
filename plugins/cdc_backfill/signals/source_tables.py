"""The source's tables as signals see them: fully qualified names, columns, primary keys (pure)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace

from cdc_backfill.names import collection_name
from cdc_backfill.signals.model import AdditionalCondition, Signal, SignalError

__all__ = ["Catalog", "TableInfo", "collection_name"]


@dataclass(frozen=True)
class TableInfo:
    schema: str
    name: str
    columns: tuple[str, ...]
    primary_key: tuple[str, ...]
    # the columns with a unique constraint or index of their own, which may serve as a surrogate key;
    # None where the catalog was not read from a source (nothing to check against)
    unique_columns: tuple[str, ...] | None = None
    nullable: tuple[str, ...] = ()  # the columns that may hold NULL

    @property
    def collection(self) -> str:
        return collection_name(self.schema, self.name)


# Dialects whose tables Debezium's connector names database.schema.table (its TableId carries the
# database as catalog), and matches the patterns of a signal's data-collections against that whole name
DATABASE_QUALIFIED = ("mssql",)


@dataclass(frozen=True)
class Catalog:
    dialect: str  # SQLAlchemy's name: postgresql, mssql, oracle, mysql
    tables: tuple[TableInfo, ...]
    database: str | None = None  # the database before schema.table in Debezium's names (SQL Server)

    def by_name(self) -> dict[str, TableInfo]:
        return {t.collection: t for t in self.tables}

    def _qualified(self, collection: str) -> str | None:
        return f"{self.database}.{collection}" if self.database else None

    def match(self, pattern: str) -> list[str]:
        """Collections whose whole name matches the regex ``pattern`` (as Debezium matches them): their
        schema.table name, or on SQL Server the database.schema.table Debezium's connector matches."""
        rx = _compile(pattern)
        return sorted(
            t.collection
            for t in self.tables
            if rx.fullmatch(t.collection) or rx.fullmatch(self._qualified(t.collection) or "")
        )

    def for_debezium(self, pattern: str) -> str:
        """``pattern`` as Debezium's connector must read it to find the same tables: on SQL Server a pattern
        that matches schema.table names only gets the database before it (Debezium would otherwise
        match nothing and snapshot nothing, saying so only in its log); elsewhere it is unchanged."""
        if not self.database:
            return pattern
        rx = _compile(pattern)
        if any(rx.fullmatch(self._qualified(t.collection) or "") for t in self.tables):
            return pattern
        if not any(rx.fullmatch(t.collection) for t in self.tables):
            return pattern  # matches nothing: refused by the checks, not rewritten
        # anchors say nothing under a whole-name match, and after the database they would match nothing
        body = pattern.removeprefix("^")
        if body.endswith("$") and not body.endswith("\\$"):
            body = body[:-1]
        body = f"(?:{body})" if "|" in body else body
        return f"{re.escape(self.database)}\\.{body}"

    def signal_for_debezium(self, signal: Signal) -> Signal:
        """``signal`` with its data-collections and additional-conditions named as Debezium's connector
        matches them (:meth:`for_debezium`); the native engine reads both forms."""
        if not self.database or not (signal.collections or signal.conditions):
            return signal
        return replace(
            signal,
            collections=tuple(self.for_debezium(p) for p in signal.collections),
            conditions=tuple(
                AdditionalCondition(self.for_debezium(c.collection), c.filter) for c in signal.conditions
            ),
        )

    def match_or_refuse(self, pattern: str) -> list[str]:
        found = self.match(pattern)
        if not found:
            names = [t.collection for t in self.tables]
            close = difflib.get_close_matches(pattern, names, n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            whole = "schema.table" if not self.database else f"schema.table or {self.database}.schema.table"
            raise SignalError(
                f"{pattern!r} matches no table in the source (a pattern must match a whole {whole} name){hint}"
            )
        return found


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise SignalError(f"{pattern!r} is not a valid regular expression: {exc}") from None
