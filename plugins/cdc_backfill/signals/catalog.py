"""The source's tables as signals see them: fully qualified names, columns, primary keys (pure)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from cdc_backfill.names import collection_name
from cdc_backfill.signals.model import SignalError

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


@dataclass(frozen=True)
class Catalog:
    dialect: str  # SQLAlchemy's name: postgresql, mssql, oracle, mysql
    tables: tuple[TableInfo, ...]

    def by_name(self) -> dict[str, TableInfo]:
        return {t.collection: t for t in self.tables}

    def match(self, pattern: str) -> list[str]:
        """Collections whose whole name matches the regex ``pattern`` (as Debezium matches them)."""
        try:
            rx = re.compile(pattern)
        except re.error as exc:
            raise SignalError(f"{pattern!r} is not a valid regular expression: {exc}") from None
        return sorted(t.collection for t in self.tables if rx.fullmatch(t.collection))

    def match_or_refuse(self, pattern: str) -> list[str]:
        found = self.match(pattern)
        if not found:
            names = [t.collection for t in self.tables]
            close = difflib.get_close_matches(pattern, names, n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise SignalError(
                f"{pattern!r} matches no table in the source (a pattern must match a whole "
                f"schema.table name){hint}"
            )
        return found
