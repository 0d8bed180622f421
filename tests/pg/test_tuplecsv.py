"""pgoutput TupleData to CSV text rows: the same values pg.csvtext reads from COPY."""

from __future__ import annotations

import struct

import pytest

from cdc_backfill.pg.csvtext import csv_row, text_table
from cdc_backfill.pg.pgoutput import ProtocolError
from cdc_backfill.pg.tuplecsv import tuple_csv
from cdc_backfill.pgtypes import PgColumn


def tuple_data(values: list[bytes | str | None]) -> bytes:
    """TupleData as the walsender writes it; the string "u" stands for an unchanged TOAST value."""
    out = struct.pack(">h", len(values))
    for v in values:
        if v is None:
            out += b"n"
        elif v == "u":
            out += b"u"
        else:
            assert isinstance(v, bytes)
            out += b"t" + struct.pack(">i", len(v)) + v
    return out


def test_a_tuple_becomes_the_csv_row_copy_would_give() -> None:
    values: list[bytes | str | None] = [b"7", b'a "quoted", line\nbreak', None, "u", b""]
    buf = b"XYZ" + tuple_data(values) + b"tail"
    line, unchanged, key, end = tuple_csv(buf, 3, (1, 0))
    assert buf[end:] == b"tail" and unchanged == [3]
    assert key == (b'"a ""quoted"", line\nbreak"', b'"7"')  # the fields as the line has them
    assert line == csv_row([b"7", b'a "quoted", line\nbreak', None, None, b""])
    columns = [PgColumn("id", "integer", 23), PgColumn("t", "text", 25), PgColumn("n", "text", 25),
               PgColumn("big", "text", 25), PgColumn("e", "text", 25)]  # fmt: skip
    assert text_table(line, columns).to_pylist() == [
        {"id": 7, "t": 'a "quoted", line\nbreak', "n": None, "big": None, "e": ""}
    ]
    with pytest.raises(ProtocolError, match="unexpected tuple data kind"):
        tuple_csv(struct.pack(">h", 1) + b"x", 0)
