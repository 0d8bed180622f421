"""PostgreSQL text output to the values Debezium's PostgreSQL connector writes by default: the tests'
reference judge compares the source's text, the stream and the chunks in this form.

The capture session runs with ``TimeZone=UTC`` and ``DateStyle=ISO``, so the text forms parsed here
are fixed. Where Debezium's default would lose exactness, the exact text is kept instead: ``numeric``
is written as its decimal string (Debezium's ``decimal.handling.mode=string``), and values outside what
the target form can hold (``infinity`` dates, ``NaN`` floats, BC timestamps) stay as the server's text.

| type | written as |
| --- | --- |
| bool | true / false |
| int2, int4, int8, oid | number |
| float4, float8 | number (NaN and infinities as text) |
| numeric, money | decimal string, exact |
| date | days since 1970-01-01 (io.debezium.time.Date) |
| time | microseconds since midnight (MicroTime) |
| timestamp | microseconds since the epoch (MicroTimestamp) |
| timestamptz | ISO-8601 in UTC with Z (ZonedTimestamp) |
| timetz | ISO time with offset (ZonedTime) |
| bytea | base64 |
| json, jsonb, uuid, text, anything else | text |
| arrays of the above | JSON arrays |
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Callable

Converter = Callable[[str], object]

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)
EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

BOOL, BYTEA, INT8, INT2, INT4, OID = 16, 17, 20, 21, 23, 26
FLOAT4, FLOAT8, MONEY, NUMERIC = 700, 701, 790, 1700
DATE, TIME, TIMESTAMP, TIMESTAMPTZ, TIMETZ = 1082, 1083, 1114, 1184, 1266

# array type -> element type, for the built-in types (others are looked up in the catalog)
ARRAY_ELEMENTS = {
    1000: BOOL, 1001: BYTEA, 1005: INT2, 1007: INT4, 1016: INT8, 1028: OID, 1021: FLOAT4, 1022: FLOAT8,
    1231: NUMERIC, 1182: DATE, 1183: TIME, 1115: TIMESTAMP, 1185: TIMESTAMPTZ, 1270: TIMETZ,
    1009: 25, 1015: 1043, 1014: 1042, 2951: 2950, 199: 114, 3807: 3802, 791: MONEY,
}  # fmt: skip


def _bool(text: str) -> object:
    return text in ("t", "true")  # pgoutput sends t/f; ``::text`` gives true/false


def _float(text: str) -> object:
    value = float(text)
    return text if value != value or value in (float("inf"), float("-inf")) else value


def _money(text: str) -> object:
    # lc_monetary=C output: "$1,234.56" / "-$1.00"; the digits are kept exact
    neg = text.startswith("-")
    digits = text.lstrip("-").lstrip("$").replace(",", "")
    return ("-" if neg else "") + digits


def _date(text: str) -> object:
    try:
        return (dt.date.fromisoformat(text) - EPOCH_DATE).days
    except ValueError:
        return text  # infinity, BC dates


def _time(text: str) -> object:
    if text.startswith("24:"):  # PostgreSQL allows 24:00:00
        return 86_400_000_000
    t = dt.time.fromisoformat(text)
    return ((t.hour * 60 + t.minute) * 60 + t.second) * 1_000_000 + t.microsecond


def _timestamp(text: str) -> object:
    try:
        d = dt.datetime.fromisoformat(text)
    except ValueError:
        return text
    delta = d - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _timestamptz(text: str) -> object:
    try:
        d = dt.datetime.fromisoformat(text)
    except ValueError:
        return text
    d = d.astimezone(dt.UTC)
    return (
        d.strftime("%Y-%m-%dT%H:%M:%S") + (f".{d.microsecond:06d}".rstrip("0") if d.microsecond else "") + "Z"
    )


def _timetz(text: str) -> object:
    # "12:34:56.789+02" -> "12:34:56.789+02:00"
    for i in range(len(text) - 1, 0, -1):
        if text[i] in "+-":
            off = text[i + 1 :]
            if ":" not in off:
                off = off + ":00"
            return text[:i] + text[i] + off
    return text


def _bytea(text: str) -> object:
    if text.startswith("\\x"):
        return base64.b64encode(bytes.fromhex(text[2:])).decode("ascii")
    return text  # bytea_output=escape: kept as the server wrote it


SCALARS: dict[int, Converter] = {
    BOOL: _bool,
    INT2: int,
    INT4: int,
    INT8: int,
    OID: int,
    FLOAT4: _float,
    FLOAT8: _float,
    MONEY: _money,
    DATE: _date,
    TIME: _time,
    TIMESTAMP: _timestamp,
    TIMESTAMPTZ: _timestamptz,
    TIMETZ: _timetz,
    BYTEA: _bytea,
}


def parse_array(text: str) -> list[object]:
    """A PostgreSQL array literal (``{1,2,NULL,"a \\"b\\""}``, nested allowed) as nested lists of text/None."""
    if text.startswith("["):  # explicit bounds, "[0:1]={1,2}": the bounds are dropped
        text = text[text.index("=") + 1 :]
    pos = 0

    def parse() -> list[object]:
        nonlocal pos
        assert text[pos] == "{"
        pos += 1
        items: list[object] = []
        if text[pos] == "}":
            pos += 1
            return items
        while True:
            ch = text[pos]
            if ch == "{":
                items.append(parse())
            elif ch == '"':
                pos += 1
                buf = []
                while text[pos] != '"':
                    if text[pos] == "\\":
                        pos += 1
                    buf.append(text[pos])
                    pos += 1
                pos += 1
                items.append("".join(buf))
            else:
                start = pos
                while text[pos] not in ",}":
                    pos += 1
                raw = text[start:pos].strip()
                items.append(None if raw == "NULL" else raw)
            if text[pos] == ",":
                pos += 1
                continue
            if text[pos] == "}":
                pos += 1
                return items

    return parse()


def _array_converter(element: Converter | None) -> Converter:
    def convert_items(items: list[object]) -> list[object]:
        return [
            convert_items(v)
            if isinstance(v, list)
            else (None if v is None else (element(v) if element is not None else v))  # type: ignore[arg-type]
            for v in items
        ]

    return lambda text: convert_items(parse_array(text))


def converter_for(type_oid: int, element_of: Callable[[int], int | None] | None = None) -> Converter | None:
    """The converter for a column type; None means "keep the text" (the fast path for text columns)."""
    if type_oid in SCALARS:
        return SCALARS[type_oid]
    element = ARRAY_ELEMENTS.get(type_oid)
    if element is None and element_of is not None:
        element = element_of(type_oid)
    if element is not None:
        return _array_converter(SCALARS.get(element))
    return None
