"""The snapshot engine's SQL, built as SQLAlchemy Core and compiled for each dialect (pure).

Keyset pagination compares keys in the database only: key values travel as the server's own text and
are cast back to the column's type, so text keys follow their collation and no key is ever compared in
Python. PostgreSQL and MySQL compare composite keys as row values; SQL Server and Oracle, which have
no row-value comparison, get the expanded form ``a > :a OR (a = :a AND b > :b)``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from cdc_backfill.signals.tables import sql_dialect

ROW_VALUE_DIALECTS = {"postgresql", "mysql"}
_POSTCOMPILE = re.compile(r"__\[POSTCOMPILE_(\w+)\]")
# the drivers the engine's SQL is compiled for: their parameter style is the one it binds with
DRIVERS = {"postgresql": "psycopg2", "mssql": "pymssql", "oracle": "oracledb", "mysql": "pymysql"}


def driver_dialect(dialect: str) -> sa.engine.Dialect:
    """``dialect`` through the driver the engine binds with (imported when first asked)."""
    return sql_dialect(dialect, DRIVERS.get(dialect))


class _Typed(sa.types.UserDefinedType):  # type: ignore[type-arg]
    """A column type known only by its SQL spelling (``numeric(12,2)``, ``text COLLATE "de-x-icu"``)."""

    cache_ok = True

    def __init__(self, spec: str) -> None:
        self.spec = spec

    def get_col_spec(self, **_: object) -> str:
        return self.spec


@dataclass(frozen=True)
class ChunkTable:
    """What the SQL needs to know of a table: its name, columns, and the key to chunk by."""

    schema: str | None
    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    key_types: tuple[str, ...]  # SQL type of each key column, for casting key values back
    nullable_key: bool = (
        False  # a single nullable chunk column (a surrogate key): NULLs get a chunk of their own
    )
    text_columns: tuple[str, ...] = ()  # columns selected as the server's text

    def table(self) -> sa.Table:
        md = sa.MetaData(schema=self.schema)
        return sa.Table(self.name, md, *(sa.Column(c) for c in self.columns))


def _key_params(t: ChunkTable, prefix: str, dialect: str) -> list[sa.ColumnElement]:  # type: ignore[type-arg]
    params = [sa.bindparam(f"{prefix}{i}", type_=sa.String()) for i in range(len(t.key))]
    if dialect == "mysql":  # MySQL casts only to a few types; it converts the text itself
        return list(params)
    return [sa.cast(p, _Typed(ty)) for p, ty in zip(params, t.key_types, strict=True)]


def _as_text(col: sa.ColumnElement, dialect: str) -> sa.ColumnElement:  # type: ignore[type-arg]
    """A key column as the server's text (the next chunk's start is written back in this form)."""
    if dialect == "mysql":
        return sa.cast(col, sa.String())  # CAST(x AS CHAR)
    spec = {"postgresql": "text", "mssql": "NVARCHAR(4000)", "oracle": "VARCHAR2(4000)"}[dialect]
    return sa.cast(col, _Typed(spec))


def _compare(cols: Sequence[sa.ColumnElement], vals: Sequence[sa.ColumnElement], op: str, row_values: bool):  # type: ignore[no-untyped-def,type-arg]
    """``cols op vals`` for op in '>' and '<=', as a row-value comparison or expanded."""
    if row_values or len(cols) == 1:
        left, right = (sa.tuple_(*cols), sa.tuple_(*vals)) if len(cols) > 1 else (cols[0], vals[0])
        return left > right if op == ">" else left <= right
    # expanded: (c1 > v1) OR (c1 = v1 AND c2 > v2) OR ...; for <=, the last comparison allows equality
    terms = []
    for i in range(len(cols)):
        eqs = [cols[j] == vals[j] for j in range(i)]
        last = len(cols) - 1
        if op == ">":
            cmp = cols[i] > vals[i]
        else:
            cmp = cols[i] <= vals[i] if i == last else cols[i] < vals[i]
        terms.append(sa.and_(*eqs, cmp))
    return sa.or_(*terms)


def condition_clause(condition: str) -> sa.TextClause:
    """A signal's checked condition as a WHERE clause. text() reads ":name" as a bind parameter, also
    inside a quoted literal ('a :b'): every colon is escaped, so the condition reaches the server exactly
    as written ("::" casts included)."""
    return sa.text("(" + condition.replace(":", "\\:") + ")")


def chunk_select(
    t: ChunkTable,
    dialect: str,
    *,
    after: bool,
    upto: bool,
    limit: int | None,
    condition: str | None = None,
    null_keys: bool = False,
    key_text: bool = False,
) -> sa.Select:  # type: ignore[type-arg]
    """One chunk: rows with key > :lo (if ``after``) and key <= :hi (if ``upto``), in key order.

    ``null_keys`` selects the rows whose (nullable, single) chunk column is NULL instead. ``key_text``
    adds each key column's text form at the end (``_cdc_k0``...): the next chunk starts after it.
    """
    tab = t.table()
    key_cols = [tab.c[k] for k in t.key]
    cols: list[sa.ColumnElement] = [  # type: ignore[type-arg]
        _as_text(tab.c[c], dialect).label(c) if c in t.text_columns else tab.c[c] for c in t.columns
    ]
    if key_text:
        cols += [_as_text(c, dialect).label(f"_cdc_k{i}") for i, c in enumerate(key_cols)]
    stmt = sa.select(*cols)
    rv = dialect in ROW_VALUE_DIALECTS
    if null_keys:
        stmt = stmt.where(key_cols[0].is_(None))
    else:
        if t.nullable_key:
            stmt = stmt.where(key_cols[0].is_not(None))
        if after:
            stmt = stmt.where(_compare(key_cols, _key_params(t, "lo", dialect), ">", rv))
        if upto:
            stmt = stmt.where(_compare(key_cols, _key_params(t, "hi", dialect), "<=", rv))
    if condition:
        stmt = stmt.where(condition_clause(condition))
    if not null_keys:
        stmt = stmt.order_by(*key_cols)
    if limit is not None:
        stmt = stmt.limit(limit)
    return stmt


def max_key_select(t: ChunkTable, dialect: str) -> sa.Select:  # type: ignore[type-arg]
    """The largest key now in the table, as text (fixed at the start: later inserts come by the stream)."""
    tab = t.table()
    key_cols = [tab.c[k] for k in t.key]
    stmt = sa.select(*[_as_text(c, dialect) for c in key_cols])
    if t.nullable_key:
        stmt = stmt.where(key_cols[0].is_not(None))
    return stmt.order_by(*[c.desc() for c in key_cols]).limit(1)


def boundary_select(t: ChunkTable, dialect: str, *, after: bool, step: int) -> sa.Select:  # type: ignore[type-arg]
    """The key ``step`` keys after :lo (or from the start) and not beyond :hi: a range boundary.

    Only the key columns are read (an index-only scan where the key is indexed), never the rows.
    """
    tab = t.table()
    key_cols = [tab.c[k] for k in t.key]
    stmt = sa.select(*[_as_text(c, dialect) for c in key_cols])
    rv = dialect in ROW_VALUE_DIALECTS
    if t.nullable_key:
        stmt = stmt.where(key_cols[0].is_not(None))
    if after:
        stmt = stmt.where(_compare(key_cols, _key_params(t, "lo", dialect), ">", rv))
    stmt = stmt.where(_compare(key_cols, _key_params(t, "hi", dialect), "<=", rv))
    return stmt.order_by(*key_cols).offset(step - 1).limit(1)


def sample_keys_select(t: ChunkTable, dialect: str, percent: float) -> sa.Select:  # type: ignore[type-arg]
    """The keys, as text and in key order, of the rows on ``percent`` of the table's pages, picked at
    random (PostgreSQL's ``TABLESAMPLE SYSTEM``), none beyond :hi: range boundaries cut from a sample
    read a few pages, where stepping through every key read the whole index."""
    if dialect != "postgresql":
        raise ValueError(f"a sample of keys is read from PostgreSQL only, not {dialect}")
    sample = sa.tablesample(t.table(), sa.func.system(sa.literal_column(f"{percent:.6f}")), name="sampled")
    key_cols = [sample.c[k] for k in t.key]
    stmt = sa.select(*[_as_text(c, dialect) for c in key_cols])
    if t.nullable_key:
        stmt = stmt.where(key_cols[0].is_not(None))
    stmt = stmt.where(_compare(key_cols, _key_params(t, "hi", dialect), "<=", True))
    return stmt.order_by(*key_cols)


# the pages a PostgreSQL table holds (:rel, its quoted name); a partitioned table's are its
# partitions' (its own size is 0, and a table that is not partitioned has no partition tree)
TABLE_PAGES = (
    "SELECT (pg_relation_size(r) + coalesce((SELECT sum(pg_relation_size(relid)) FROM pg_partition_tree(r)"
    " WHERE isleaf AND relid <> r), 0)) / current_setting('block_size')::int FROM CAST(:rel AS regclass) r"
)


def count_select(t: ChunkTable, condition: str | None = None) -> sa.Select:  # type: ignore[type-arg]
    """The table's rows, or those ``condition`` selects."""
    stmt = sa.select(sa.func.count()).select_from(t.table())
    return stmt.where(condition_clause(condition)) if condition else stmt


def compile_sql(stmt: sa.ClauseElement, dialect: str) -> str:
    """The statement's SQL for ``dialect``: key values as placeholders, row counts (TOP n, LIMIT n,
    FETCH FIRST n, OFFSET n) written in, as the engine's own integers."""
    compiled = stmt.compile(dialect=driver_dialect(dialect))
    counts = {k: v for k, v in compiled.params.items() if k.startswith("param_")}
    sql = _POSTCOMPILE.sub(lambda m: str(int(counts[m.group(1)])), str(compiled))
    for name, value in counts.items():  # dialects that bind LIMIT/OFFSET as ordinary parameters
        sql = sql.replace(f"%({name})s", str(int(value))).replace(f":{name}", str(int(value)))
    return sql


def key_params(prefix: str, values: Sequence[str] | None) -> dict[str, str]:
    return {f"{prefix}{i}": v for i, v in enumerate(values or ())}
