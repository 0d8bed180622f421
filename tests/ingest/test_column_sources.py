"""Column-type files and type names as users write them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdc_backfill.ingest.column_sources import ColumnsError, ColumnSources, pg_type_name, read_column_types
from cdc_backfill.pgtypes import PgColumn


@pytest.mark.parametrize(
    ("given", "want"),
    [
        ("int", "integer"),
        ("INT8", "bigint"),
        ("Numeric( 12 , 2 )", "numeric(12,2)"),
        ("decimal(5,0)", "numeric(5,0)"),
        ("timestamptz", "timestamp with time zone"),
        ("timestamp(3)", "timestamp(3) without time zone"),
        ("timestamptz(6)", "timestamp(6) with time zone"),
        ("timestamp(3) with time zone", "timestamp(3) with time zone"),
        ("time", "time without time zone"),
        ("varchar(255)", "character varying(255)"),
        ("text[]", "text[]"),
        ("double  precision", "double precision"),
        ("jsonb", "jsonb"),
        ("bigitn", None),
        ("nvarchar(20)", None),
    ],
)
def test_type_names_in_their_usual_spellings(given: str, want: str | None) -> None:
    assert pg_type_name(given) == want


def write(tmp_path: Path, doc: object) -> Path:
    path = tmp_path / "types.json"
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def test_a_column_type_file_gives_columns_in_order_and_the_key(tmp_path: Path) -> None:
    path = write(tmp_path, {"public.o": {"key": ["id"], "columns": {"id": "bigint", "at": "timestamptz"}}})
    assert read_column_types(path) == {
        "public.o": ([PgColumn("id", "bigint", 0), PgColumn("at", "timestamp with time zone", 0)], ["id"])
    }


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("{oops", r"types\.json is not a JSON column-type file"),
        ([], r"expected \{"),
        ({"public.o": {"columns": {"id": "int"}}}, r'public\.o: give "key" as a list of column names'),
        ({"public.o": {"key": ["id"], "columns": []}}, r'public\.o: give "columns" as an object'),
        ({"public.o": {"key": ["id"], "columns": {"n": "int"}}}, r"key column\(s\) id not among its columns"),
    ],
)
def test_a_bad_column_type_file_says_what_is_wrong(tmp_path: Path, doc: object, message: str) -> None:
    with pytest.raises(ColumnsError, match=message):
        read_column_types(write(tmp_path, doc))
    with pytest.raises(ColumnsError, match="no column-type file at"):
        read_column_types(tmp_path / "missing.json")


def test_columns_come_from_the_landing_then_the_catalog_then_the_file(tmp_path: Path) -> None:
    from cdc_backfill.landing.event_log import describe

    describe(tmp_path, "public.a", [PgColumn("id", "integer", 23)], ["id"])
    catalog = {"public.b": ([PgColumn("k", "text", 25)], ["k"])}
    given = {
        "public.b": ([PgColumn("k", "bigint", 0)], ["k"]),
        "public.c": ([PgColumn("x", "text", 0)], ["x"]),
    }
    sources = ColumnSources(tmp_path, "public.cdc_signal", catalog.get, given)
    found = sources.columns(["public.a", "public.b", "public.c", "public.cdc_signal"])
    assert found["public.a"][0][0].type == "integer" and found["public.b"][0][0].type == "text"
    assert found["public.c"][1] == ["x"] and found["public.cdc_signal"][1] == ["id"]
    assert sources.known_keys() == {"public.a": ["id"], "public.b": ["k"], "public.c": ["x"]}
    with pytest.raises(ColumnsError, match=r"no column types for public\.d, public\.e: give --source URL"):
        sources.columns(["public.e", "public.d", "public.a"])
