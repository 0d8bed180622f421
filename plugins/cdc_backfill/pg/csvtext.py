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
        return pa.table({n: pa.array([], type=types[n]) for n in names}).cast(_schema(columns, text_columns))
    table = pacsv.read_csv(
        io.BytesIO(data),
        read_options=pacsv.ReadOptions(column_names=names, block_size=8 << 20),
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


def text_tail(data: bytes, names: Sequence[str], wanted: Sequence[str]) -> tuple[int, list[str] | None]:
    """How many CSV rows ``data`` holds (its columns ``names``) and the last row's ``wanted`` values as
    text, without converting the other columns: a reader needs only these before its next query."""
    if not data:
        return 0, None
    table = pacsv.read_csv(
        io.BytesIO(data),
        read_options=pacsv.ReadOptions(column_names=list(names), block_size=8 << 20),
        convert_options=pacsv.ConvertOptions(
            include_columns=list(wanted),
            column_types=dict.fromkeys(wanted, pa.string()),
            null_values=[""],  # NULL is an unquoted empty field, as in text_table
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )
    n = table.num_rows
    return n, ([table.column(w)[n - 1].as_py() for w in wanted] if n else None)


def _schema(columns: Sequence[PgColumn], text_columns: Sequence[str]) -> pa.Schema:
    return pa.schema(
        [pa.field(c.name, arrow_type(c)) for c in columns] + [pa.field(n, pa.string()) for n in text_columns]
    )
