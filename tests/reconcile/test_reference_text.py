"""The reference judge's reading of the server's text output (``tests.support.pgtext``): each type in the
form Debezium's PostgreSQL connector writes it."""

from __future__ import annotations

import base64

import pytest

from tests.support import pgtext as values
from tests.support.pgtext import converter_for, parse_array


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("{}", []),
        ("{1,2,NULL}", ["1", "2", None]),
        ('{"a b","c\\"d",e}', ["a b", 'c"d', "e"]),
        ("{{1,2},{3,4}}", [["1", "2"], ["3", "4"]]),
        ('{"NULL",NULL}', ["NULL", None]),
        ("[0:1]={7,8}", ["7", "8"]),
    ],
)
def test_parse_array(text: str, parsed: list[object]) -> None:
    assert parse_array(text) == parsed


@pytest.mark.parametrize(
    ("oid", "text", "value"),
    [
        (values.BOOL, "t", True),
        (values.INT8, "9223372036854775807", 9223372036854775807),
        (values.FLOAT8, "1.5", 1.5),
        (values.FLOAT8, "NaN", "NaN"),
        (values.FLOAT4, "-Infinity", "-Infinity"),
        (values.DATE, "1970-01-02", 1),
        (values.DATE, "infinity", "infinity"),
        (values.TIME, "01:02:03.000004", 3_723_000_004),
        (values.TIME, "24:00:00", 86_400_000_000),
        (values.TIMESTAMP, "1970-01-01 00:00:01.5", 1_500_000),
        (values.TIMESTAMP, "2024-01-02 03:04:05.123456", 1704164645123456),
        (values.TIMESTAMPTZ, "2024-01-02 03:04:05.12+02", "2024-01-02T01:04:05.12Z"),
        (values.TIMESTAMPTZ, "2024-01-02 03:04:05+00", "2024-01-02T03:04:05Z"),
        (values.TIMETZ, "12:34:56.789+02", "12:34:56.789+02:00"),
        (values.BYTEA, "\\x00ff", base64.b64encode(b"\x00\xff").decode()),
        (values.MONEY, "-$1,234.50", "-1234.50"),
        (1007, "{1,NULL,3}", [1, None, 3]),
        (1115, '{"1970-01-01 00:00:00"}', [0]),
    ],
)
def test_converters_write_debezium_defaults(oid: int, text: str, value: object) -> None:
    conv = converter_for(oid)
    assert conv is not None
    assert conv(text) == value


def test_text_like_types_keep_the_text() -> None:
    for oid in (25, 1043, 1700, 114, 3802, 2950):  # text, varchar, numeric (exact), json, jsonb, uuid
        assert converter_for(oid) is None
    assert converter_for(99999, element_of=lambda oid: 25)("{a,b}") == ["a", "b"]
