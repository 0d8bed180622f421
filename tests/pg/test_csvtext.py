"""PostgreSQL text values to lake types: the one conversion READ chunks and stream events share."""

from __future__ import annotations

import csv
import datetime as dt
import io
import random
from decimal import Decimal

from cdc_backfill.pg.csvtext import csv_row, last_fields, text_table
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


def test_the_last_rows_key_text_is_read_back_from_the_end_as_written() -> None:
    # a key of text with a comma, a quote and a line break, after a value whose text would not convert
    rows = [[b"1", b"not a number", b"a"], [b"2", b"x,\ny", b'k "1",\n2']]
    assert last_fields(b"".join(csv_row(r) for r in rows), 1) == ['k "1",\n2']
    assert last_fields(b"".join(csv_row(r) for r in rows), 2) == ["x,\ny", 'k "1",\n2']
    # a NULL key (the NULL range's chunk) stays NULL, an empty text key stays empty, as text_table reads them
    assert last_fields(b"1,\n", 1) == [None]
    assert last_fields(b'1,""\n', 1) == [""]
    assert last_fields(b'1,""""\n', 1) == ['"']
    assert last_fields(b'1,"a,"""\n', 1) == ['a,"']


def _copy_csv(values: list[str | None]) -> bytes:
    """A row as COPY (FORMAT csv) writes it: quoted only when it must be, NULL as nothing."""

    def field(v: str | None) -> str:
        if v is None:
            return ""
        if v == "" or any(c in v for c in ',"\n\r'):
            return '"' + v.replace('"', '""') + '"'
        return v

    return (",".join(field(v) for v in values) + "\n").encode()


def test_the_last_fields_match_a_full_parse_of_random_rows() -> None:
    rng = random.Random(7)
    alphabet = ["a", "é", ",", '"', "\n", "\r", " ", "1"]
    for _ in range(500):
        rows = [
            [
                rng.choice([None, "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))])
                for _ in range(4)
            ]
            for _ in range(rng.randint(1, 4))
        ]
        data = b"".join(_copy_csv(r) for r in rows)
        parsed = list(csv.reader(io.StringIO(data.decode(), newline="")))
        assert [None if rows[-1][i] is None else parsed[-1][i] for i in range(4)] == rows[-1]
        for count in (1, 2, 4):
            assert last_fields(data, count) == rows[-1][-count:], (data, count)


def test_text_with_line_breaks_converts_past_a_block() -> None:
    """Data longer than the reader's 8 MB block, with line breaks in values: a block must not end inside
    a value."""
    rows = [[b"%d" % i, b"line one\nline two %d" % i] for i in range(600_000)]
    data = b"".join(csv_row(r) for r in rows)
    assert len(data) > 16 << 20
    table = text_table(data, [PgColumn("id", "integer", 23), PgColumn("note", "text", 25)])
    assert table.num_rows == 600_000
    assert table.column("note")[599_999].as_py() == "line one\nline two 599999"
    assert table.column("id").to_pylist() == list(range(600_000))
