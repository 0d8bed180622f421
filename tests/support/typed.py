"""The typed Python form the tests compare values in: a value as the stream (Debezium JSON), the
source's text output and the READ chunks (Arrow) give it, brought to one form (see ``cdc_backfill.pgtypes``).
Test-side only: the product compares in Spark and SQL."""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any

from cdc_backfill.pgtypes import PgColumn
from tests.support.pgtext import EPOCH, EPOCH_DATE, converter_for


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
