"""The source's side of verify as PostgreSQL statements, built as strings by pure functions.

All of them run in one REPEATABLE READ transaction after :func:`settings_statements`, so the count, the
boundaries and the hashes see one snapshot of the table, and every ``CAST(... AS TEXT)`` writes values
the way the snapshot engine's session reads them (the state's text columns hold that text).
"""

from __future__ import annotations

from collections.abc import Sequence

from cdc_backfill.names import quote_ident, quoted_table
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.verify.forms import (
    HASH_HEX_DIGITS,
    boundary_spark_text,
    canonical_sql,
    encoded_sql,
    literal_sql,
    order_sql,
)
from cdc_backfill.verify.ranges import Bound, KeyRange

# The snapshot engine's session (cdc_backfill.pg.conninfo.SESSION_OPTIONS, checked by a test), plus
# the two settings the statements here rely on: string literals without backslash escapes, and the
# default interval text.
SETTINGS: dict[str, str] = {
    "TimeZone": "UTC",
    "DateStyle": "ISO",
    "extra_float_digits": "3",
    "bytea_output": "hex",
    "IntervalStyle": "postgres",
    "standard_conforming_strings": "on",
}


def settings_statements() -> list[str]:
    return [f"SET LOCAL {name} = '{value}'" for name, value in SETTINGS.items()]


def table_sql(schema: str, table: str) -> str:
    return quoted_table(schema, table)


def count_sql(schema: str, table: str) -> str:
    return f"SELECT count(*) FROM {table_sql(schema, table)}"


def boundaries_sql(schema: str, table: str, key: Sequence[PgColumn], rows: Sequence[int]) -> str:
    """The keys at the given row numbers in key order: per key column its text (``_cdc_s<i>``) and its
    Spark comparable (``_cdc_p<i>``), in key order. Only the key columns are read."""
    names = ", ".join(quote_ident(c.name) for c in key)
    order = ", ".join(order_sql(c, quote_ident(c.name)) for c in key)
    outs = []
    for i, c in enumerate(key):
        ref = f"k.{quote_ident(c.name)}"
        outs += [f"CAST({ref} AS TEXT) AS _cdc_s{i}", f"{boundary_spark_text(c, ref)} AS _cdc_p{i}"]
    wanted = ", ".join(str(int(r)) for r in rows) or "NULL"
    return (
        f"SELECT {', '.join(outs)} FROM ("
        f"SELECT {names}, row_number() OVER (ORDER BY {order}) AS _cdc_rn FROM {table_sql(schema, table)}"
        f") AS k WHERE k._cdc_rn IN ({wanted}) ORDER BY k._cdc_rn"
    )


def _compare(key: Sequence[PgColumn], bound: Bound, op: str) -> str:
    """``key op bound`` with each column in its order (a row-value comparison for composite keys)."""
    left = [order_sql(c, quote_ident(c.name)) for c in key]
    right = [literal_sql(c, text) for c, text in zip(key, bound.sql, strict=True)]
    if len(key) == 1:
        return f"{left[0]} {op} {right[0]}"
    return f"({', '.join(left)}) {op} ({', '.join(right)})"


def key_le(key: Sequence[PgColumn], bound: Bound) -> str:
    return _compare(key, bound, "<=")


def key_gt(key: Sequence[PgColumn], bound: Bound) -> str:
    return _compare(key, bound, ">")


def range_predicate(key: Sequence[PgColumn], lo: Bound | None, hi: Bound | None) -> str | None:
    """``lo < key <= hi`` over the table's own columns (an additional-condition); None: every key."""
    parts = []
    if lo is not None:
        parts.append(key_gt(key, lo))
    if hi is not None:
        parts.append(key_le(key, hi))
    return " AND ".join(parts) or None


def range_case_sql(key: Sequence[PgColumn], ranges: Sequence[KeyRange]) -> str:
    """The index of the range each row's key falls in (ranges ascending, each ending at its ``hi``)."""
    whens = [f"WHEN {key_le(key, r.hi)} THEN {r.index}" for r in ranges if r.hi is not None]
    if not whens:
        return str(ranges[-1].index)
    return f"CASE {' '.join(whens)} ELSE {ranges[-1].index} END"


def stats_sql(
    schema: str, table: str, columns: Sequence[PgColumn], key: Sequence[PgColumn], ranges: Sequence[KeyRange]
) -> str:
    """Per range: ``_cdc_r`` (its index), row count and the sum of each row's hash as exact text.

    A row's hash is the first 60 bits of the md5 of its UTF-8 text (see ``forms``); the innermost query
    computes each canonical value once (``OFFSET 0`` keeps the planner from inlining it twice).
    """
    values = ", ".join(f"{canonical_sql(c, quote_ident(c.name))} AS _cdc_v{i}" for i, c in enumerate(columns))
    row_text = " || ".join(encoded_sql(f"_cdc_v{i}") for i in range(len(columns)))
    digest = f"substr(md5(convert_to({row_text}, 'UTF8')), 1, {HASH_HEX_DIGITS})"
    row_hash = f"CAST(CAST('x' || {digest} AS bit({HASH_HEX_DIGITS * 4})) AS bigint)"
    return (
        "SELECT _cdc_r, count(*) AS _cdc_rows, CAST(coalesce(sum(_cdc_h), 0) AS TEXT) AS _cdc_hash FROM ("
        f"SELECT _cdc_r, {row_hash} AS _cdc_h FROM ("
        f"SELECT {range_case_sql(key, ranges)} AS _cdc_r, {values} FROM {table_sql(schema, table)} OFFSET 0"
        ") AS v) AS h GROUP BY _cdc_r ORDER BY _cdc_r"
    )
