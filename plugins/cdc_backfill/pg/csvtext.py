"""PostgreSQL's text output of values, as ``COPY ... (FORMAT csv)`` and pgoutput both give it, to Arrow
columns in the lake types (``pgtypes.arrow_type``): one conversion for READ events and stream events,
so a value reaches the state the same way whichever path carried it.

CSV conventions (what ``COPY`` writes and :func:`csv_row` writes too): an unquoted empty field is
NULL, a quoted one is an empty string; ``t``/``f`` are booleans; bytea is ``\\x`` and hex digits.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.csv as pacsv

from cdc_backfill.pgtypes import PgColumn, arrow_type


def csv_row(values: Iterable[bytes | None]) -> bytes:
    """One CSV line of text-format values: every value quoted (so an empty string stays one), NULL as
    an empty field."""
    return b",".join(b"" if v is None else b'"' + v.replace(b'"', b'""') + b'"' for v in values) + b"\n"


def text_table(data: bytes, columns: Sequence[PgColumn], text_columns: Sequence[str] = ()) -> pa.Table:
    """CSV rows of the columns' text values (then ``text_columns``, kept as text) as an Arrow table in
    the lake types."""
    names = [c.name for c in columns] + list(text_columns)
    types: dict[str, pa.DataType] = {}
    for c in columns:
        t = arrow_type(c)
        types[c.name] = pa.string() if pa.types.is_binary(t) else t  # bytea: decoded below
    for name in text_columns:
        types[name] = pa.string()
    if not data:
        return _schema(columns, text_columns).empty_table()
    table = pacsv.read_csv(
        io.BytesIO(data),
        read_options=pacsv.ReadOptions(column_names=names, block_size=8 << 20),
        # text may hold line breaks: without this, data longer than a block was cut at a line break
        # inside a value (the rest a row of its own: "Expected 7 columns, got 1")
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types=types,
            true_values=["t"],
            false_values=["f"],
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )
    for i, c in enumerate(columns):  # bytea arrives as \x-hex text
        if c.kind == "bytea":
            values = [None if v is None else bytes.fromhex(v[2:]) for v in table.column(i).to_pylist()]
            table = table.set_column(i, c.name, pa.array(values, pa.binary()))
    return table


def last_fields(data: bytes, count: int) -> list[str | None]:
    """The last ``count`` fields of the last CSV row of ``data`` as text (an unquoted empty field is
    NULL), read backwards from its end: the rows before it are never looked at, where counting them
    would tokenize the whole chunk. Outside a field quotes come in pairs (``""``), so going back from a
    quoted field's closing quote, the first run of quotes of odd length holds its opening quote."""
    pos = len(data) - 1 if data.endswith(b"\n") else len(data)
    values: list[str | None] = []
    for _ in range(count):
        if pos > 0 and data[pos - 1] == 0x22:  # '"': a quoted field, ending at pos - 1
            close = pos - 1
            run_end = close
            while True:
                last_quote = data.rfind(b'"', 0, run_end)
                if last_quote < 0:
                    raise ValueError("a CSV field's opening quote is missing")
                run_start = last_quote
                while run_start > 0 and data[run_start - 1] == 0x22:
                    run_start -= 1
                if (last_quote - run_start + 1) % 2:
                    break
                run_end = run_start
            values.append(data[run_start + 1 : close].replace(b'""', b'"').decode())
            pos = run_start
        else:  # unquoted: no comma, quote or line break inside
            start = max(data.rfind(b",", 0, pos), data.rfind(b"\n", 0, pos)) + 1
            values.append(data[start:pos].decode() or None)
            pos = start
        pos -= 1  # the comma before the field
    return values[::-1]


def _schema(columns: Sequence[PgColumn], text_columns: Sequence[str]) -> pa.Schema:
    return pa.schema(
        [pa.field(c.name, arrow_type(c)) for c in columns] + [pa.field(n, pa.string()) for n in text_columns]
    )
