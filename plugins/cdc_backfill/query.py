"""Reading the state as a user does: what collections it holds, their rows, any SQL over them (DuckDB).

Each collection with a state table is a view named by its full name (``"public.customers"``, in double
quotes) and, when no other collection shares it, by its table name alone (``customers``). A view reads
the files the table's Delta log names for the version asked (the current one by default), and shows the
table's own columns; the bookkeeping columns (``_cdc_position``, ``_cdc_unknown``) stay in the files.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdc_backfill.lakepath import lake_path
from cdc_backfill.names import quote_ident as _quote
from cdc_backfill.state.table import (
    BOOKKEEPING,
    StateError,
    StateTable,
    StateVersion,
    current_version,
    state_collections,
)

HIDDEN = BOOKKEEPING


class StateQueryError(ValueError):
    """The state folder or the query cannot be used; the message says why."""


@dataclass(frozen=True)
class Result:
    columns: list[str]
    rows: list[tuple[Any, ...]]


def view_sql(
    collection: str, source: str, columns: Sequence[str], name: str | None = None, all_columns: bool = False
) -> str:
    """``CREATE VIEW`` over ``source`` (a relation holding one version's rows), without the bookkeeping
    columns among ``columns`` unless ``all_columns`` (pure)."""
    hidden = [c for c in HIDDEN if c in columns and not all_columns]
    exclude = f" EXCLUDE ({', '.join(hidden)})" if hidden else ""
    return f"CREATE VIEW {_quote(name or collection)} AS SELECT *{exclude} FROM {_quote(source)}"


def view_names(collections: Sequence[str]) -> dict[str, list[str]]:
    """Every collection's view names: its full name, and its table name when that is unique (pure)."""
    tables = Counter(c.rsplit(".", 1)[-1] for c in collections)
    names: dict[str, list[str]] = {}
    for c in collections:
        table = c.rsplit(".", 1)[-1]
        names[c] = [c] + ([table] if table != c and tables[table] == 1 else [])
    return names


def _require_state(state: Path) -> list[str]:
    if not lake_path(state).is_dir():
        raise StateQueryError(f"no state folder at {state} (run `cdc-backfill reconcile` first)")
    collections = state_collections(state)
    if not collections:
        from cdc_backfill.state.table import StateTable, old_format_reason

        root = lake_path(state)
        for old in (p.name for p in root.iterdir() if StateTable(root, p.name).old_format()):
            raise StateQueryError(old_format_reason(state, old))
        raise StateQueryError(
            f"no collection has a state in {state} yet (run `cdc-backfill reconcile` first)"
        )
    return collections


def _version(
    state: Path, collection: str, version: int | None = None, as_of: str | None = None
) -> StateVersion | None:
    try:
        return current_version(state, collection, version, as_of)
    except StateError as exc:
        raise StateQueryError(str(exc)) from None


def describe(state: Path) -> Result:
    """One row per collection: rows, Delta version, stream position, rows still missing a column value."""
    rows = []
    for coll in _require_state(state):
        v = _version(state, coll)
        run, meta = (v.run, v.meta) if v is not None else ({}, {})
        rows.append(
            (
                coll,
                run.get("rows"),
                v.version if v is not None else None,
                ",".join(str(p) for p in meta.get("position") or []),
                run.get("rows_with_unknown_columns", 0),
            )
        )
    return Result(["collection", "rows", "version", "position", "rows_with_unknown_columns"], rows)


def history(state: Path, collection: str) -> Result:
    """Every version of one collection's state: when, its rows, the position it is complete up to."""
    _require_collection(state, collection)
    rows = [
        (
            h["version"],
            _when(h["timestamp_ms"]),
            h.get("rows"),
            ",".join(str(p) for p in h.get("position") or []),
        )
        for h in StateTable(state, collection).history()
    ]
    return Result(["version", "committed_at", "rows", "position"], rows)


def _when(ms: int) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def run_sql(
    state: Path,
    sql: str,
    limit: int | None = None,
    versions: dict[str, int] | None = None,
    as_of: str | None = None,
    all_columns: bool = False,
) -> Result:
    """``sql`` over the views of every collection of ``state``: each at its current version, or at the
    version ``versions`` gives it, or at the one current at ``as_of`` (a collection created later has
    no view then)."""
    import duckdb

    _require_select(sql)
    collections = _require_state(state)
    con = duckdb.connect()
    try:
        # each version read once: a reconcile committing meanwhile cannot mix two versions in a query
        read = {c: _version(state, c, (versions or {}).get(c), as_of if c not in (versions or {}) else None)
                for c in collections}  # fmt: skip
        held = [c for c, v in read.items() if v is not None]
        if not held:
            raise StateQueryError(f"no collection of {state} had a state yet at {as_of}")
        views = view_names(held)
        for i, (coll, names) in enumerate(views.items()):
            source = f"_cdc_version_{i}"
            dataset = read[coll].dataset()  # type: ignore[union-attr]
            con.register(source, dataset)
            for name in names:
                con.execute(view_sql(coll, source, dataset.schema.names, name, all_columns))
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


def _require_collection(state: Path, collection: str) -> None:
    if collection not in _require_state(state):
        known = ", ".join(state_collections(state)) or "none"
        raise StateQueryError(f"no state for {collection} in {state} (collections with a state: {known})")


def show(
    state: Path, collection: str, limit: int = 20, version: int | None = None, as_of: str | None = None
) -> Result:
    """The first ``limit`` rows of one collection (at ``version``, or as of ``as_of``)."""
    _require_collection(state, collection)
    versions = {collection: version} if version is not None else None
    if as_of is not None and _version(state, collection, None, as_of) is None:
        raise StateQueryError(f"{collection} had no state yet at {as_of}")
    return run_sql(state, f"SELECT * FROM {_quote(collection)}", limit, versions, as_of)


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
