"""PostgreSQL column types: how snapshot chunks store them (Arrow), and one typed Python form that the
stream (Debezium JSON values), the chunks (Arrow) and the source (psycopg2) are all brought to, so that
keys can be matched and states compared exactly.

Typed form: int, float, Decimal, bool, date, time, naive datetime (timestamp), UTC-aware datetime
(timestamptz), bytes (bytea), str (text, uuid, json, jsonb, time with zone, interval, anything else),
and lists of Debezium values for arrays.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa

from cdc_backfill.pg.values import converter_for

EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)
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


def from_debezium(col: PgColumn, value: Any) -> Any:
    """A value as the capture (or Debezium's defaults) wrote it, in the typed form."""
    if value is None:
        return None
    kind = col.kind
    if kind == "numeric":
        return Decimal(value) if isinstance(value, str) else Decimal(str(value))
    if kind == "date":
        return EPOCH_DATE + dt.timedelta(days=value) if isinstance(value, int) else value
    if kind == "timestamp":
        return EPOCH + dt.timedelta(microseconds=value) if isinstance(value, int) else value
    if kind == "timestamptz":
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else value
    if kind == "time":
        if isinstance(value, int):
            return (EPOCH + dt.timedelta(microseconds=value)).time()
        return value
    if kind == "bytea":
        return base64.b64decode(value) if isinstance(value, str) else value
    if kind == "float":
        return float(value)
    return value


def from_text(col: PgColumn, text: str | None) -> Any:
    """The server's text output of a value (COPY, ``::text``) in the typed form. Reading the source as
    text and converting here is how verify and the tests read it: one conversion for everything."""
    if text is None:
        return None
    conv = converter_for(col.oid)
    return from_debezium(col, conv(text) if conv is not None else text)


def from_arrow(col: PgColumn, value: Any) -> Any:
    """A value read back from a chunk (pyarrow ``to_pylist``) in the typed form."""
    if value is None:
        return None
    if isinstance(value, str):  # stored as the server's text (arrays, timetz, unconstrained numeric, ...)
        return from_text(col, value)
    if col.kind == "timestamptz" and isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC)
    return value
