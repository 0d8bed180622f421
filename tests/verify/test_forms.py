from __future__ import annotations

from decimal import Decimal

import pytest

from cdc_backfill.pg.conninfo import SESSION_OPTIONS
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.verify import VerifyError, forms
from cdc_backfill.verify.sql import SETTINGS


def col(type_: str, name: str = "c") -> PgColumn:
    return PgColumn(name, type_, 0)


@pytest.mark.parametrize(
    ("type_", "form", "order"),
    [
        ("smallint", forms.INT, forms.NATIVE),
        ("integer", forms.INT, forms.NATIVE),
        ("bigint", forms.INT, forms.NATIVE),
        ("numeric(12,2)", forms.DECIMAL, forms.NATIVE),
        ("numeric(38,0)", forms.DECIMAL, forms.NATIVE),
        ("numeric(50,5)", forms.NUMERIC_TEXT, forms.AS_TEXT),
        ("numeric", forms.NUMERIC_TEXT, forms.AS_TEXT),
        ("real", forms.FLOAT4, forms.NATIVE),
        ("double precision", forms.FLOAT8, forms.NATIVE),
        ("boolean", forms.BOOL, forms.NATIVE),
        ("date", forms.DATE, forms.NATIVE),
        ("timestamp without time zone", forms.TIMESTAMP, forms.NATIVE),
        ("timestamp(3) with time zone", forms.TIMESTAMPTZ, forms.NATIVE),
        ("bytea", forms.BYTEA, forms.NATIVE),
        ("uuid", forms.TEXT, forms.NATIVE),
        ("text", forms.TEXT, forms.COLLATE),
        ("character varying(20)", forms.TEXT, forms.COLLATE),
        ("character(5)", forms.BPCHAR, forms.COLLATE),
        ("jsonb", forms.TEXT, forms.AS_TEXT),
        ("integer[]", forms.TEXT, forms.AS_TEXT),
        ("citext", forms.TEXT, forms.AS_TEXT),  # collatable, but compares case-insensitively
    ],
)
def test_every_kind_has_a_value_form_and_an_order(type_: str, form: str, order: str) -> None:
    assert forms.value_form(col(type_)) == form
    assert forms.order_form(col(type_)) == order


def test_internal_columns_are_never_compared() -> None:
    cols = [
        col("bigint", "id"),
        col("text", "_cdc_position"),
        col("text", "_cdc_whatever"),
        col("text", "cdc_x"),
    ]
    assert [c.name for c in forms.visible(cols)] == ["id", "cdc_x"]


def test_canonical_sql_per_form() -> None:
    assert forms.canonical_sql(col("bigint"), '"c"') == 'CAST("c" AS TEXT)'
    assert forms.canonical_sql(col("bytea"), '"c"') == "encode(\"c\", 'hex')"
    assert "float8send" in forms.canonical_sql(col("double precision"), '"c"')
    assert "float4send" in forms.canonical_sql(col("real"), '"c"')
    assert "'NaN' THEN 'NaN'" in forms.canonical_sql(col("real"), '"c"')
    assert "DATE '1970-01-01'" in forms.canonical_sql(col("date"), '"c"')
    assert 'extract(epoch FROM "c") * 1000000' in forms.canonical_sql(col("timestamp with time zone"), '"c"')
    assert forms.NUMERIC_TRIM in forms.canonical_sql(col("numeric"), '"c"')
    # NULL is a marker that no value's encoding starts with (they all start with their length)
    assert forms.encoded_sql("v") == "coalesce(length(v) || ':' || v, 'N')"


def test_order_sql_compares_text_by_bytes() -> None:
    assert forms.order_sql(col("text"), '"w"') == '"w" COLLATE "C"'
    assert forms.order_sql(col("jsonb"), '"j"') == 'CAST("j" AS TEXT) COLLATE "C"'
    assert forms.order_sql(col("bigint"), '"id"') == '"id"'


@pytest.mark.parametrize(
    ("type_", "text", "literal"),
    [
        ("bigint", "-12", "-12"),
        ("numeric(12,2)", "1.50", "1.50"),
        ("boolean", "true", "TRUE"),
        ("date", "2024-01-02", "CAST('2024-01-02' AS date)"),
        ("timestamp with time zone", "2024-01-02 03:04:05.123456+00",
         "CAST(('2024-01-02 03:' || '04:' || '05.123456+00') AS timestamp with time zone)"),
        ("uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "CAST('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11' AS uuid)"),
        ("text", "it's", "'it''s'"),
        ("text", "a :b", "('a :' || 'b')"),  # never ':b', which SQLAlchemy's text() takes for a parameter
        ("text", "50%", "'50%'"),
    ],
)  # fmt: skip
def test_literals(type_: str, text: str, literal: str) -> None:
    assert forms.literal_sql(col(type_), text) == literal


def test_spark_values_are_typed_like_the_state() -> None:
    assert forms.spark_value(col("bigint"), "-5") == -5
    assert forms.spark_value(col("numeric(12,2)"), "1.50") == Decimal("1.50")
    assert forms.spark_value(col("real"), "1.1") == 1.1
    assert forms.spark_value(col("date"), "-3") == -3  # the boundary's canonical days
    assert forms.spark_value(col("text"), "x") == "x"
    with pytest.raises(VerifyError, match="cannot hold"):
        forms.spark_value(col("timestamp without time zone"), "infinity")
    with pytest.raises(VerifyError, match="cannot hold"):
        forms.spark_value(col("numeric(12,2)"), "NaN")


def test_settings_are_the_snapshot_engines_session() -> None:
    # text columns of the state hold what the engine's session wrote: verify reads under the same settings
    engine = dict(opt.split("=", 1) for opt in SESSION_OPTIONS.replace("-c ", "").split())
    assert engine.items() <= SETTINGS.items()
