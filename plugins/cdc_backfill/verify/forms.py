"""One canonical text per value and one order per key column, written once for both sides (pure).

The source computes them in SQL (:func:`canonical_sql`, :func:`order_sql`), Spark computes the same on the
state (``cdc_backfill.verify.spark.range_stats`` follows :func:`value_form` / :func:`key_compare`), so a value hashes
the same on both sides exactly when it is the same value.

Canonical text of a value, by its form:

| form | columns | canonical text |
| --- | --- | --- |
| int | smallint, integer, bigint, oid | decimal digits |
| decimal | numeric(p,s), p <= 38 (a Spark decimal in the state) | the server's text: exactly s decimals |
| numeric_text | numeric, numeric(p,s) with p > 38 (text in the state) | the text with trailing fraction zeros (and a bare ``.``) removed: ``1.50`` -> ``1.5``, ``2.00`` -> ``2``; ``NaN`` as is |
| float4, float8 | real, double precision | the IEEE bits as a signed decimal integer; every NaN as ``NaN`` |
| bool | boolean | ``true`` / ``false`` |
| date | date | days since 1970-01-01 |
| timestamp, timestamptz | with and without zone | microseconds since the epoch (the instant for timestamptz, the wall clock for timestamp) |
| bytea | bytea | lower-case hex |
| bpchar | character(n) | the value without its trailing blanks (as PostgreSQL compares it) |
| text | everything else: text, varchar, json, jsonb, uuid, arrays, ... | the server's text output |

Edge cases, on purpose:
- floats are compared by their bits, not by a decimal rendering (the two sides print doubles
  differently): ``0.0`` and ``-0.0`` differ, every NaN equals every other NaN.
- ``infinity`` dates and timestamps, ``NaN`` in numeric(p,s), and BC dates beyond Spark's range cannot be
  held by the state's types: the source side falls back to the server's text for them, which never
  equals what the state holds, so their range is reported as differing.
- ``text`` forms (arrays, json, uuid, interval, ...) equal only when the state holds the server's text
  as the snapshot engine reads it (session settings in :data:`cdc_backfill.verify.sql.SETTINGS`).

A row's text is the concatenation, in the source's column order, of ``<length>:<text>`` per value and
``N`` for NULL: a value's encoding always starts with a digit, so NULL, ``''`` and the text ``N`` all
differ, and no two rows with different values give the same text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from cdc_backfill.pgtypes import PgColumn, decimal_shape
from cdc_backfill.verify import VerifyError

INTERNAL_PREFIX = "_cdc_"  # the state's own columns (position, and later others): never compared
NULL_MARK = "N"
SEPARATOR = ":"
HASH_HEX_DIGITS = 15  # 60 bits of each row's md5: a bigint in PostgreSQL, a long in Spark
NUMERIC_TRIM = r"(\.[0-9]*[1-9])0+$|\.0+$"  # same regex, same replacement ("\1" / "$1") on both sides

# value forms (see the table above)
INT = "int"
DECIMAL = "decimal"
NUMERIC_TEXT = "numeric_text"
FLOAT4 = "float4"
FLOAT8 = "float8"
BOOL = "bool"
DATE = "date"
TIMESTAMP = "timestamp"
TIMESTAMPTZ = "timestamptz"
BYTEA = "bytea"
BPCHAR = "bpchar"
TEXT = "text"

# How a key column is ordered. NATIVE: by its type, the same in both (numbers, dates, bytea, uuid).
# COLLATE: text by bytes, ``COLLATE "C"`` in PostgreSQL (Spark compares strings as UTF-8 bytes), whatever
# collation the column has. AS_TEXT: types Spark cannot order like PostgreSQL: both order their text.
NATIVE, COLLATE, AS_TEXT = "native", "collate", "as_text"

_BPCHAR_RE = re.compile(r"^(character|bpchar)(\(\d+\))?$")
_TEXT_TYPES_RE = re.compile(r"^(text|name|character varying(\(\d+\))?)$")
_INTEGER_RE = re.compile(r"^-?\d+$")
_DECIMAL_RE = re.compile(r"^-?\d+(\.\d+)?$")


def visible(columns: Sequence[PgColumn]) -> list[PgColumn]:
    """The columns compared: every one but the internal ``_cdc_`` ones."""
    return [c for c in columns if not c.name.startswith(INTERNAL_PREFIX)]


def value_form(col: PgColumn) -> str:
    kind = col.kind
    if kind == "int":
        return INT
    if kind == "numeric":
        return DECIMAL if decimal_shape(col) else NUMERIC_TEXT
    if kind == "float":
        return FLOAT4 if col.type == "real" else FLOAT8
    if kind in (BOOL, DATE, TIMESTAMP, TIMESTAMPTZ, BYTEA):
        return kind
    if _BPCHAR_RE.match(col.type):
        return BPCHAR
    return TEXT


def canonical_sql(col: PgColumn, ref: str) -> str:
    """PostgreSQL expression for the canonical text of ``ref`` (NULL stays NULL)."""
    form = value_form(col)
    text = f"CAST({ref} AS TEXT)"
    if form == NUMERIC_TEXT:
        return f"regexp_replace({text}, '{NUMERIC_TRIM}', '\\1')"
    if form in (FLOAT4, FLOAT8):
        send, bits, as_int = ("float4send", 32, "integer") if form == FLOAT4 else ("float8send", 64, "bigint")
        bits_text = (
            f"CAST(CAST(CAST('x' || encode({send}({ref}), 'hex') AS bit({bits})) AS {as_int}) AS TEXT)"
        )
        return f"CASE WHEN {ref} = 'NaN' THEN 'NaN' ELSE {bits_text} END"
    if form == DATE:
        return f"CASE WHEN isfinite({ref}) THEN CAST({ref} - DATE '1970-01-01' AS TEXT) ELSE {text} END"
    if form in (TIMESTAMP, TIMESTAMPTZ):
        # extract(epoch) is exact numeric from PostgreSQL 14 on; a timestamp's epoch is its wall clock
        micros = f"CAST(CAST(extract(epoch FROM {ref}) * 1000000 AS bigint) AS TEXT)"
        return f"CASE WHEN isfinite({ref}) THEN {micros} ELSE {text} END"
    if form == BYTEA:
        return f"encode({ref}, 'hex')"
    return text  # int, decimal, bool, bpchar (the cast drops the padding), text


def encoded_sql(value_ref: str) -> str:
    """One value's part of the row text: ``<length>:<text>``, or ``N`` for NULL."""
    return f"coalesce(length({value_ref}) || '{SEPARATOR}' || {value_ref}, '{NULL_MARK}')"


# ---------------------------------------------------------------- key order


def order_form(col: PgColumn) -> str:
    form = value_form(col)
    if (
        form in (INT, DECIMAL, FLOAT4, FLOAT8, BOOL, DATE, TIMESTAMP, TIMESTAMPTZ, BYTEA)
        or col.type == "uuid"
    ):
        return NATIVE
    if form == BPCHAR or _TEXT_TYPES_RE.match(col.type):
        return COLLATE
    return AS_TEXT


def order_sql(col: PgColumn, ref: str) -> str:
    """The expression a key column is compared by in PostgreSQL."""
    form = order_form(col)
    if form == COLLATE:
        return f'{ref} COLLATE "C"'
    if form == AS_TEXT:
        return f'CAST({ref} AS TEXT) COLLATE "C"'
    return ref


def key_compare(col: PgColumn) -> str:
    """What Spark compares a key column by (``cdc_backfill.verify.spark.range_stats``): the typed value (int, decimal,
    float4, float8, bool), its canonical number (date, timestamp, timestamptz), its hex (bytea), the
    value without trailing blanks (bpchar), else the string."""
    form = value_form(col)
    if order_form(col) == AS_TEXT:
        return TEXT
    return form if form != NUMERIC_TEXT else TEXT


def boundary_spark_text(col: PgColumn, ref: str) -> str:
    """The text of a boundary key as Spark compares it (see :func:`key_compare`); SQL literals are
    written from its plain ``CAST(... AS TEXT)``."""
    if key_compare(col) in (DATE, TIMESTAMP, TIMESTAMPTZ, BYTEA):
        return canonical_sql(col, ref)
    return f"CAST({ref} AS TEXT)"


def sql_string(text: str) -> str:
    """A SQL string literal. A colon starts a new piece (``'a:' || 'b'``): the snapshot engine runs the
    condition through SQLAlchemy's ``text()``, which would take ``:b`` for a bind parameter."""
    if ":" not in text:
        return "'" + text.replace("'", "''") + "'"
    pieces = [p for p in re.split(r"(?<=:)", text) if p]
    return "(" + " || ".join("'" + p.replace("'", "''") + "'" for p in pieces) + ")"


def literal_sql(col: PgColumn, text: str) -> str:
    """A boundary value as a SQL literal, comparable with :func:`order_sql` of the column."""
    order = order_form(col)
    if order != NATIVE:
        return sql_string(text)
    form = value_form(col)
    if form == INT and _INTEGER_RE.match(text):
        return text
    if form == DECIMAL and _DECIMAL_RE.match(text):
        return text
    if form == BOOL:
        return "TRUE" if text == "true" else "FALSE"
    return f"CAST({sql_string(text)} AS {col.type})"


def spark_value(col: PgColumn, text: str) -> Any:
    """A boundary value as the Python value of what Spark compares (see :func:`key_compare`)."""
    how = key_compare(col)
    try:
        if how == INT:
            return int(text)
        if how == DECIMAL:
            value = Decimal(text)
            if not value.is_finite():
                raise ValueError(text)
            return value
        if how in (FLOAT4, FLOAT8):
            return float(text)  # the server's shortest exact text; NaN and Infinity parse too
        if how == BOOL:
            return text == "true"
        if how in (DATE, TIMESTAMP, TIMESTAMPTZ):
            return int(text)
    except ValueError:
        raise VerifyError(
            f"key column {col.name} ({col.type}) has the value {text!r}, which the state cannot hold"
        ) from None
    return text
