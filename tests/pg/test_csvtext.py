"""PostgreSQL text values to lake types: the one conversion READ chunks and stream events share."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from cdc_backfill.pg.csvtext import csv_row, text_table, text_tail
from cdc_backfill.pgtypes import PgColumn

COLUMNS = [
    PgColumn("id", "integer", 23),
    PgColumn("name", "text", 25),
    PgColumn("amount", "numeric(12,2)", 1700),
    PgColumn("ok", "boolean", 16),
    PgColumn("at", "timestamp without time zone", 1114),
    PgColumn("raw", "bytea", 17),
    PgColumn("tags", "text[]", 1009),
]


def test_text_values_as_copy_and_pgoutput_give_them_reach_their_lake_types() -> None:
    rows = [
        [
            b"1",
            b'say "hi", then\nleave',
            b"12.50",
            b"t",
            b"2026-11-24 01:02:03.000004",
            b"\\x00ff",
            b'{a,"b c"}',
        ],
        [b"2", b"", None, b"f", None, None, b"{}"],
        [b"3", None, b"-0.01", None, b"1999-12-31 23:59:59", b"\\x", None],
    ]
    table = text_table(b"".join(csv_row(r) for r in rows), COLUMNS)
    assert table.to_pylist() == [
        {"id": 1, "name": 'say "hi", then\nleave', "amount": Decimal("12.50"), "ok": True,
         "at": dt.datetime(2026, 11, 24, 1, 2, 3, 4), "raw": b"\x00\xff", "tags": '{a,"b c"}'},
        {"id": 2, "name": "", "amount": None, "ok": False, "at": None, "raw": None, "tags": "{}"},
        {"id": 3, "name": None, "amount": Decimal("-0.01"), "ok": None, "at": dt.datetime(1999, 12, 31, 23, 59, 59),
         "raw": b"", "tags": None},
    ]  # fmt: skip


def test_no_rows_give_the_typed_empty_table() -> None:
    table = text_table(b"", COLUMNS, ["_k0"])
    assert (
        table.num_rows == 0 and table.schema.field("raw").type == "binary" and table.schema.names[-1] == "_k0"
    )


def test_the_tail_gives_the_row_count_and_the_last_rows_key_text_as_written() -> None:
    # a key of text with a comma, a quote and a line break, after a value whose text would not convert
    rows = [[b"1", b"not a number", b"a"], [b"2", b"x,\ny", b'k "1",\n2']]
    assert text_tail(b"".join(csv_row(r) for r in rows), ["id", "amount", "_cdc_k0"], ["_cdc_k0"]) == (
        2,
        ['k "1",\n2'],
    )
    assert text_tail(b"", ["id", "_cdc_k0"], ["_cdc_k0"]) == (0, None)
    # a NULL key (the NULL range's chunk) stays NULL, an empty text key stays empty, as text_table reads them
    assert text_tail(b"1,\n", ["id", "_cdc_k0"], ["_cdc_k0"]) == (1, [None])
    assert text_tail(b'1,""\n', ["id", "_cdc_k0"], ["_cdc_k0"]) == (1, [""])
