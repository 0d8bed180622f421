"""pgoutput TupleData to CSV text rows: the same values pg.csvtext reads from COPY."""

from __future__ import annotations

import struct

import pytest

from cdc_backfill.pg.csvtext import csv_row, text_table
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
    with pytest.raises(ValueError, match="unexpected tuple data kind"):
        tuple_csv(struct.pack(">h", 1) + b"x", 0)


def test_random_tuples_give_the_row_copy_would_give() -> None:
    import random

    rng = random.Random(3)
    alphabet = [b"a", b'"', b",", b"\n", b"\r", b"\\", b"\x00", "é".encode(), b" "]
    for _ in range(2000):
        values: list[bytes | str | None] = []
        for _ in range(rng.randint(0, 8)):
            r = rng.random()
            values.append(
                None
                if r < 0.15
                else "u"
                if r < 0.25
                else b"".join(rng.choices(alphabet, k=rng.randint(0, 6)))
            )
        data = tuple_data(values)
        buf = b"ab" + data + b"z"
        keys = tuple(rng.randrange(len(values)) for _ in range(rng.randint(0, 2))) if values else ()
        line, unchanged, key, end = tuple_csv(buf, 2, keys)
        plain = [None if v == "u" else v for v in values]
        assert line == csv_row(plain)  # type: ignore[arg-type]
        assert unchanged == [i for i, v in enumerate(values) if v == "u"]
        assert key == tuple(csv_row([plain[i]]).rstrip(b"\n") for i in keys)  # type: ignore[list-item]
        assert end == 2 + len(data)
    for bad in (b"\x00\x02t\x00\x00\x00\x05ab", b"\x00\x01x", b"\x00"):
        with pytest.raises(ValueError, match=r"truncated|unexpected"):
            tuple_csv(bad, 0, ())
