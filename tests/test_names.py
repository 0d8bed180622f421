"""Collection names: written and read by one rule."""

from __future__ import annotations

import pytest

from cdc_backfill.names import (
    collection_name,
    quote_ident,
    quoted_table,
    spark_ident,
    spark_string,
    split_collection,
)


@pytest.mark.parametrize(
    ("schema", "table"), [("public", "orders"), ("a.b", "c"), ("s", "t.u"), ("dbo", "cdc_signal")]
)
def test_split_is_the_inverse_of_writing(schema: str, table: str) -> None:
    assert split_collection(collection_name(schema, table)) == (schema, table)


def test_a_bare_table_has_no_schema() -> None:
    assert split_collection("cdc_signal") == (None, "cdc_signal")


def test_identifiers_are_quoted_one_way() -> None:
    assert quote_ident('we"ird') == '"we""ird"'
    assert quoted_table("a.b", "c") == '"a.b"."c"' and quoted_table(None, "t") == '"t"'
    assert spark_ident("we`ird col") == "`we``ird col`"  # Spark SQL: backticks
    assert spark_string("it's a\\b") == "CAST(X'6974277320615c62' AS STRING)"  # its UTF-8 bytes: no escapes
