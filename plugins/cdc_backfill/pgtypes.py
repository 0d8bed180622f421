"""PostgreSQL column types: a column's name, type and kind, and how snapshot chunks store it (Arrow).

The typed Python form the tests compare values in lives with the tests (``tests/support/typed.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa

_NUMERIC_RE = re.compile(r"^numeric\((\d+),(\d+)\)$")
_TIMESTAMP_RE = re.compile(r"^timestamp(\(\d\))? without time zone$")
_TIMESTAMPTZ_RE = re.compile(r"^timestamp(\(\d\))? with time zone$")
_TIME_RE = re.compile(r"^time(\(\d\))? without time zone$")
INTS = {"smallint": pa.int16(), "integer": pa.int32(), "bigint": pa.int64(), "oid": pa.int64()}


@dataclass(frozen=True)
class PgColumn:
    name: str
    type: str  # format_type(atttypid, atttypmod): "integer", "numeric(12,2)", "text[]", ...
    oid: int
    nullable: bool = True

    @property
    def kind(self) -> str:
        t = self.type
        if t in INTS:
            return "int"
        if t in ("real", "double precision"):
            return "float"
        if t == "boolean":
            return "bool"
        if t == "date":
            return "date"
        if _NUMERIC_RE.match(t) or t == "numeric":
            return "numeric"
        if _TIMESTAMP_RE.match(t):
            return "timestamp"
        if _TIMESTAMPTZ_RE.match(t):
            return "timestamptz"
        if _TIME_RE.match(t):
            return "time"
        if t == "bytea":
            return "bytea"
        if t.endswith("[]"):
            return "array"
        return "text"


def decimal_shape(col: PgColumn) -> tuple[int, int] | None:
    """(precision, scale) of a numeric column that fits a 38-digit decimal; None: kept as text."""
    m = _NUMERIC_RE.match(col.type)
    if m and int(m.group(1)) <= 38:
        return int(m.group(1)), int(m.group(2))
    return None


def arrow_type(col: PgColumn) -> pa.DataType:
    """The Arrow type a chunk stores the column as (numeric beyond 38 digits or unconstrained: text)."""
    kind = col.kind
    if kind == "int":
        return INTS[col.type]
    if kind == "float":
        return pa.float32() if col.type == "real" else pa.float64()
    if kind == "bool":
        return pa.bool_()
    if kind == "date":
        return pa.date32()
    if kind == "numeric":
        shape = decimal_shape(col)
        return pa.decimal128(*shape) if shape else pa.string()
    if kind == "timestamp":
        return pa.timestamp("us")
    if kind == "timestamptz":
        return pa.timestamp("us", tz="UTC")
    if kind == "time":
        # the server's text: Spark reads Parquet TIME only behind a preview flag (spark.sql.timeType)
        return pa.string()
    if kind == "bytea":
        return pa.binary()
    return pa.string()
