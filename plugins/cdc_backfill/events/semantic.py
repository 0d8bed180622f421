"""Decoding Debezium / Kafka Connect semantic types named by the JSON converter's schema (docs/design.md §5.1).

Only used when a record carries the ``{schema, payload}`` wrapper: without it the literal values
cannot be told apart from plain numbers and are kept as they are.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from cdc_backfill.events.model import UNAVAILABLE, ParseError

Decoder = Callable[[Any], Any]

EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)


def _int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParseError(f"{name} value is not an integer: {value!r}")
    return value


def _time_from_micros(micros: int) -> dt.time:
    return (EPOCH + dt.timedelta(microseconds=micros)).time()


def _bytes(value: Any, name: str) -> bytes:
    if not isinstance(value, str):
        raise ParseError(f"{name} value is not base64 text: {value!r}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ParseError(f"{name} value is not valid base64: {value!r}") from None


def _decimal(scale: int) -> Decoder:
    def decode(value: Any) -> Decimal:
        unscaled = int.from_bytes(_bytes(value, "Decimal"), "big", signed=True)
        return Decimal(unscaled).scaleb(-scale)

    return decode


def _variable_scale_decimal(value: Any) -> Decimal:
    if not isinstance(value, dict) or "scale" not in value or "value" not in value:
        raise ParseError(f"VariableScaleDecimal is not {{scale, value}}: {value!r}")
    return _decimal(_int(value["scale"], "VariableScaleDecimal.scale"))(value["value"])


def _zoned(value: Any) -> dt.datetime:
    if not isinstance(value, str):
        raise ParseError(f"ZonedTimestamp is not text: {value!r}")
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        raise ParseError(f"ZonedTimestamp is not ISO-8601: {value!r}") from None


_BY_NAME: dict[str, Decoder] = {
    "io.debezium.time.Date": lambda v: EPOCH_DATE + dt.timedelta(days=_int(v, "Date")),
    "org.apache.kafka.connect.data.Date": lambda v: EPOCH_DATE + dt.timedelta(days=_int(v, "Date")),
    "io.debezium.time.Time": lambda v: _time_from_micros(_int(v, "Time") * 1000),
    "org.apache.kafka.connect.data.Time": lambda v: _time_from_micros(_int(v, "Time") * 1000),
    "io.debezium.time.MicroTime": lambda v: _time_from_micros(_int(v, "MicroTime")),
    # Python times and datetimes hold microseconds: nanoseconds are cut to them.
    "io.debezium.time.NanoTime": lambda v: _time_from_micros(_int(v, "NanoTime") // 1000),
    "io.debezium.time.Timestamp": lambda v: EPOCH + dt.timedelta(milliseconds=_int(v, "Timestamp")),
    "org.apache.kafka.connect.data.Timestamp": lambda v: (
        EPOCH + dt.timedelta(milliseconds=_int(v, "Timestamp"))
    ),
    "io.debezium.time.MicroTimestamp": lambda v: EPOCH + dt.timedelta(microseconds=_int(v, "MicroTimestamp")),
    "io.debezium.time.NanoTimestamp": lambda v: (
        EPOCH + dt.timedelta(microseconds=_int(v, "NanoTimestamp") // 1000)
    ),
    "io.debezium.time.ZonedTimestamp": _zoned,
    "io.debezium.data.VariableScaleDecimal": _variable_scale_decimal,
}


def field_decoder(field_schema: dict[str, Any]) -> Decoder | None:
    """The decoder for one field of a Connect struct schema, or None to keep the value as it is."""
    name = field_schema.get("name")
    ftype = field_schema.get("type")
    if name == "org.apache.kafka.connect.data.Decimal":
        if ftype != "bytes":  # decimal.handling.mode=double or string: already a plain value
            return None
        params = field_schema.get("parameters") or {}
        try:
            scale = int(params.get("scale", 0))
        except (TypeError, ValueError):
            raise ParseError(f"Decimal field has a bad scale: {params!r}") from None
        return _decimal(scale)
    if name in _BY_NAME:
        return _BY_NAME[name]
    if ftype == "bytes":
        return lambda v: _bytes(v, "bytes")
    return None


def struct_decoders(struct_schema: dict[str, Any] | None) -> dict[str, Decoder]:
    """Decoders for the fields of a struct schema that need one."""
    if not struct_schema:
        return {}
    out: dict[str, Decoder] = {}
    for f in struct_schema.get("fields") or []:
        dec = field_decoder(f)
        if dec is not None:
            out[f["field"]] = dec
    return out


def decode_row(row: dict[str, Any] | None, decoders: dict[str, Decoder]) -> dict[str, Any] | None:
    """Apply decoders to a row; nulls and the TOAST placeholder stay as they are."""
    if row is None or not decoders:
        return row
    out = dict(row)
    for name, dec in decoders.items():
        value = out.get(name)
        if value is None or value == UNAVAILABLE:
            continue
        try:
            out[name] = dec(value)
        except ParseError as exc:
            raise ParseError(f"column {name}: {exc}") from None
    return out


def envelope_field(envelope_schema: dict[str, Any] | None, field: str) -> dict[str, Any] | None:
    """The schema of ``before``/``after`` inside an Envelope schema."""
    if not envelope_schema:
        return None
    for f in envelope_schema.get("fields") or []:
        if f.get("field") == field:
            return f
    return None
