"""Reading the state as a user does: what collections it holds, their rows, any SQL over them (DuckDB).

Each collection with a current version is a view named by its full name (``"public.customers"``, in
double quotes) and, when no other collection shares it, by its table name alone (``customers``). The
views show the table's own columns; the bookkeeping columns (``_cdc_position``, ``_cdc_unknown``) stay
in the Parquet files.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdc_backfill.layout import CURRENT, collection_dir, current_path, read_log, state_collections
from cdc_backfill.names import quote_ident as _quote

HIDDEN = ("_cdc_position", "_cdc_unknown")


class StateQueryError(ValueError):
    """The state folder or the query cannot be used; the message says why."""


@dataclass(frozen=True)
class Result:
    columns: list[str]
    rows: list[tuple[Any, ...]]


def view_sql(collection: str, current: Path, name: str | None = None) -> str:
    """``CREATE VIEW`` of a collection's current version, without the bookkeeping columns (pure)."""
    files = str(current / "*.parquet").replace("'", "''")
    hidden = ", ".join(HIDDEN)
    return (
        f"CREATE VIEW {_quote(name or collection)} AS "
        f"SELECT * EXCLUDE ({hidden}) FROM read_parquet('{files}')"
    )


def view_names(collections: Sequence[str]) -> dict[str, list[str]]:
    """Every collection's view names: its full name, and its table name when that is unique (pure)."""
    tables = Counter(c.rsplit(".", 1)[-1] for c in collections)
    names: dict[str, list[str]] = {}
    for c in collections:
        table = c.rsplit(".", 1)[-1]
        names[c] = [c] + ([table] if table != c and tables[table] == 1 else [])
    return names


def _require_state(state: Path) -> list[str]:
    if not Path(state).is_dir():
        raise StateQueryError(f"no state folder at {state} (run `cdc-backfill reconcile` first)")
    collections = state_collections(state)
    if not collections:
        raise StateQueryError(
            f"no collection has a state in {state} yet (run `cdc-backfill reconcile` first)"
        )
    return collections


def describe(state: Path) -> Result:
    """One row per collection: rows, version, stream position, rows still missing a column value."""
    rows = []
    for coll in _require_state(state):
        log = read_log(collection_dir(state, coll))
        last = log[-1] if log else {}
        rows.append(
            (
                coll,
                last.get("rows"),
                f"v{last['version']:06d}" if "version" in last else "",
                ",".join(str(p) for p in last.get("position") or []),
                last.get("rows_with_unknown_columns", 0),
            )
        )
    return Result(["collection", "rows", "version", "position", "rows_with_unknown_columns"], rows)


def run_sql(state: Path, sql: str, limit: int | None = None) -> Result:
    """``sql`` over the views of every collection of ``state``."""
    import duckdb

    _require_select(sql)
    collections = _require_state(state)
    views = view_names(collections)
    con = duckdb.connect()
    try:
        for coll, names in views.items():
            # resolved once: a reconcile switching `current` meanwhile cannot mix two versions in a query
            current = (collection_dir(state, coll) / CURRENT).resolve()
            for name in names:
                con.execute(view_sql(coll, current, name))
        try:
            rel = con.sql(sql)
        except duckdb.Error as exc:
            first = str(exc).strip().splitlines()[0]
            named = ", ".join(_quote(n) if "." in n else n for names in views.values() for n in names)
            raise StateQueryError(f"the query failed: {first} (views: {named})") from None
        if rel is None:
            raise StateQueryError("the query returned nothing: give a SELECT")
        rows = (rel.limit(limit) if limit else rel).fetchall()
        return Result(list(rel.columns), rows)
    finally:
        con.close()


def _require_select(sql: str) -> None:
    """One query, a SELECT (``WITH ...`` and ``read_parquet(...)`` included): ``state --sql`` reads, it
    never writes a file or changes anything (DuckDB's own parser says what a statement is)."""
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise StateQueryError(f"the query failed: {str(exc).strip().splitlines()[0]}") from None
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        kinds = ", ".join(s.type.name for s in statements) or "nothing"
        raise StateQueryError(f"--sql takes one SELECT query, not {kinds}")


def show(state: Path, collection: str, limit: int = 20) -> Result:
    """The first ``limit`` rows of one collection."""
    if current_path(state, collection) is None:
        known = ", ".join(state_collections(state)) or "none"
        raise StateQueryError(f"no state for {collection} in {state} (collections with a state: {known})")
    return run_sql(state, f"SELECT * FROM {_quote(collection)}", limit)


def render(result: Result, width: int = 40) -> str:
    """A plain aligned table; long values cut to ``width`` characters (pure)."""

    def cell(v: Any) -> str:
        text = "NULL" if v is None else str(v)
        return text if len(text) <= width else text[: width - 1] + "…"

    cells = [[cell(v) for v in row] for row in result.rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(result.columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(result.columns, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.append(f"({len(result.rows)} row{'s' if len(result.rows) != 1 else ''})")
    return "\n".join(lines)
