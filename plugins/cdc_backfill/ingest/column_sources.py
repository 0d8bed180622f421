"""Where ``ingest`` takes a collection's columns and key from, in this order: what the landing zone
already says (the log's schema document, a snapshot chunk, the JSON capture's ``_schemas``), the source's
catalog when a source is given, a column-type file the user wrote. A collection none of them describes
is refused by name before anything is written.

The column-type file (JSON) names PostgreSQL types, as ``format_type`` writes them or their usual short
forms; the lake types follow from them as for every other path::

    {"public.orders": {"key": ["id"], "columns": {"id": "bigint", "amount": "numeric(12,2)",
                                                  "placed_at": "timestamptz", "note": "text"}}}
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.columns import collection_columns, landed_collections
from cdc_backfill.pgtypes import PgColumn

Described = tuple[list[PgColumn], list[str]]

# the signal table's columns as every engine writes them (docs/design.md §2)
SIGNAL_COLUMNS: Described = (
    [PgColumn("id", "text", 25), PgColumn("type", "text", 25), PgColumn("data", "text", 25)],
    ["id"],
)

_ALIASES = {
    "int": "integer", "int4": "integer", "int8": "bigint", "int2": "smallint", "serial": "integer",
    "bigserial": "bigint", "float8": "double precision", "float4": "real", "float": "double precision",
    "bool": "boolean", "varchar": "character varying",
    "char": "character", "decimal": "numeric",
}  # fmt: skip
_KNOWN = re.compile(
    r"^(smallint|integer|bigint|oid|real|double precision|boolean|date|numeric(\(\d+,\d+\))?|"
    r"timestamp(\(\d\))? with(out)? time zone|time(\(\d\))? with(out)? time zone|interval|bytea|text|"
    r"character varying(\(\d+\))?|character(\(\d+\))?|json|jsonb|uuid|xml|inet|cidr|macaddr|money|"
    r"bit(\(\d+\))?|bit varying(\(\d+\))?|tsvector)(\[\])?$"
)


class ColumnsError(ValueError):
    """A collection without columns, or a column-type file that cannot be read: the message says which
    and what to do."""


def pg_type_name(name: str) -> str | None:
    """A type as the user wrote it in PostgreSQL's ``format_type`` spelling; None when unknown."""
    text = re.sub(r"\s+", " ", name.strip().lower())
    text = re.sub(
        r"\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)",
        lambda m: f"({m.group(1)}{',' + m.group(2) if m.group(2) else ''})",
        text,
    )
    array = text.endswith("[]")
    base = text.removesuffix("[]")
    head, paren, rest = base.partition("(")
    if head in ("timestamp", "time", "timestamptz", "timetz") and "time zone" not in base:
        zone = "with" if head.endswith("tz") else "without"
        base = f"{head.removesuffix('tz')}{paren}{rest} {zone} time zone"
    else:
        base = _ALIASES.get(head, head) + paren + rest
    out = base + ("[]" if array else "")
    return out if _KNOWN.match(out) else None


def read_column_types(path: Path) -> dict[str, Described]:
    """A column-type file: collection -> (columns, key)."""
    try:
        doc = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ColumnsError(f"no column-type file at {path}") from None
    except (OSError, ValueError) as exc:
        raise ColumnsError(f"{path} is not a JSON column-type file: {exc}") from None
    if not isinstance(doc, dict):
        raise ColumnsError(
            f'{path}: expected {{"schema.table": {{"key": [...], "columns": {{name: type}}}}}}'
        )
    out = {}
    for collection, spec in doc.items():
        where = f"{path}: {collection}"
        if not isinstance(spec, dict) or not isinstance(spec.get("columns"), dict) or not spec["columns"]:
            raise ColumnsError(f'{where}: give "columns" as an object of column name to type')
        key = spec.get("key")
        if not isinstance(key, list) or not key or not all(isinstance(k, str) for k in key):
            raise ColumnsError(f'{where}: give "key" as a list of column names')
        columns = []
        for name, given in spec["columns"].items():
            pg = pg_type_name(given) if isinstance(given, str) else None
            if pg is None:
                raise ColumnsError(
                    f"{where}.{name}: unknown type {given!r}; use PostgreSQL type names (bigint, "
                    "numeric(12,2), text, timestamptz, boolean, date, bytea, ...)"
                )
            columns.append(PgColumn(name, pg, 0))
        missing = [k for k in key if k not in spec["columns"]]
        if missing:
            raise ColumnsError(f"{where}: key column(s) {', '.join(missing)} not among its columns")
        out[collection] = (columns, list(key))
    return out


def catalog_columns(url: str) -> Callable[[str], Described | None]:
    """A lookup of collections in the source's catalog (PostgreSQL), one connection for all."""
    from cdc_backfill.config import source_engine
    from cdc_backfill.names import split_collection
    from cdc_backfill.pg.catalog import primary_key, table_columns

    sa_engine = source_engine(url)

    def lookup(collection: str) -> Described | None:
        schema, table = split_collection(collection)
        with sa_engine.connect() as conn:
            columns = table_columns(conn, schema, table)
            key = primary_key(conn, schema, table)
        return (list(columns), list(key)) if columns and key else None

    return lookup


class ColumnSources:
    """Where a run of ``ingest`` finds columns and keys: the records' own ``{schema, payload}`` wrappers
    (``wrapped``, known once the files are parsed), the landing zone, the source's catalog, the
    column-type file (in that order)."""

    def __init__(
        self,
        landing: Path,
        signal_table: str,
        source: Callable[[str], Described | None] | None = None,
        given: dict[str, Described] | None = None,
        wrapped: dict[str, Described] | None = None,
    ) -> None:
        self.landing = lake_path(landing)
        self.signal_table = signal_table
        self.source = source
        self.given = given or {}
        self.wrapped = wrapped or {}

    def with_wrapped(self, wrapped: dict[str, Described]) -> ColumnSources:
        """The same sources, with what the parsed records' wrappers say first."""
        return ColumnSources(self.landing, self.signal_table, self.source, self.given, wrapped)

    def find(self, collection: str) -> Described | None:
        if collection in self.wrapped:
            return self.wrapped[collection]
        try:
            return collection_columns(self.landing, collection)
        except FileNotFoundError:
            pass
        found = self.source(collection) if self.source is not None else None
        if found is None:
            found = self.given.get(collection)
        if found is None and collection == self.signal_table:
            found = SIGNAL_COLUMNS
        return found

    def known(self) -> dict[str, Described]:
        """Columns and keys known before reading any event: the landing's collections and the file's."""
        out = dict(self.given)
        for coll in landed_collections(self.landing, self.signal_table):
            found = self.find(coll)
            if found is not None:
                out[coll] = found
        return out

    def known_keys(self) -> dict[str, list[str]]:
        """Keys known before reading any event (the parser needs them for records without a Kafka key)."""
        return {c: key for c, (_, key) in self.known().items()}

    def columns(self, collections: Iterable[str]) -> dict[str, Described]:
        """Every collection's (columns, key); ColumnsError naming each one nothing describes."""
        out: dict[str, Described] = {}
        missing = []
        for coll in sorted(set(collections)):
            found = self.find(coll)
            if found is None:
                missing.append(coll)
            else:
                out[coll] = found
        if missing:
            raise ColumnsError(
                f"no column types for {', '.join(missing)}: give --source URL (its catalog), or "
                "--column-types FILE naming each one's key and columns (docs/guides/debezium-and-kafka.md, Ingest); nothing was ingested"
            )
        return out


def shape_mismatch(
    collection: str, key_sets: Iterable[Iterable[str]], columns: Iterable[str], described: Described
) -> str | None:
    """Why the events of ``collection`` (the sets of key names they carry, every column name they carry)
    contradict its description (columns and key), or None when they fit (pure). Typing such events by
    the description would land wrong rows: a key taken from a column the events do not carry is NULL."""
    names = {c.name for c in described[0]}
    key = described[1]
    problems = []
    if key:
        wrong = sorted({tuple(sorted(k)) for k in key_sets} - {tuple(sorted(key))})
        if wrong:
            shown = " or ".join(f"({', '.join(k)})" for k in wrong[:3])
            problems.append(f"its events are keyed by {shown}, its description by ({', '.join(key)})")
    extra = sorted(set(columns) - names)
    if extra:
        problems.append(f"its events carry column(s) {', '.join(extra[:5])} that its description lacks")
    if not problems:
        return None
    return f"{collection}: " + "; ".join(problems)


def job_sources(
    landing: Path, signal_table: str, catalog_url: str | None = None, column_types: Path | None = None
) -> ColumnSources:
    """What a job types collections from: the landing, the catalog at ``catalog_url`` and the column-type
    file ``column_types`` where given (ColumnsError for a file that cannot be read)."""
    given = read_column_types(column_types) if column_types else None
    return ColumnSources(landing, signal_table, catalog_columns(catalog_url) if catalog_url else None, given)
