"""A landing file of the common PostgreSQL record read in C (``_plainjson``), as Arrow columns: the
events ``events.parse.parse_lines`` gives for the same file, without a Python object per event.

Which record: the one ``events.debezium.plain_postgres`` reads by its short path (this project's
capture, a sink's key and value pairs of the PostgreSQL connector), the same with unavailable-value
placeholders (their columns listed unchanged, as the general path lists them), and tombstones between
them. A file holding any other line (a schema line, JSON the reader is not sure of) is read whole by
the Python parser: the stream's state (a key change's delete and create) runs through the file, so the
two never share one. The reader is a required part of the package, as the capture's decoder is: without
it ingest of Debezium's JSON is three times slower (docs/benchmarks.md). The columns' texts ``key``,
``before`` and ``after`` are the line's own JSON (a string's escapes and a number's digits as written,
where the Python parser writes them again): the same values for the typed reader that reads them next.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa

from cdc_backfill.arrowbuf import char_array, from_buffers, string_array
from cdc_backfill.ingest import _plainjson

FORMAT = "debezium-postgresql"
STRING = pa.string()


@dataclass(frozen=True)
class PlainFile:
    """The events of one file: each column by its name in the parser's rows, and the shapes first
    seen among them (``shape`` of the parser's rows, by event index)."""

    count: int
    columns: dict[str, pa.Array]
    shapes: dict[int, str]


def _strings(n: int, parts: tuple[bytes, ...], kind: pa.DataType = STRING) -> pa.Array:
    """A variable-width column from the reader's (data, offsets) or (validity, data, offsets)."""
    validity, data, offsets = parts if len(parts) == 3 else (None, *parts)
    return from_buffers(kind, n, data, offsets, validity)


def sparse_strings(n: int, values: dict[int, str]) -> pa.Array:
    """n strings, null but at ``values``' indexes (few): taken from those values by index, so that no
    Python loop runs once per event."""
    if not values:
        return pa.nulls(n, pa.string())
    at = sorted(values)
    picks = array("i", bytes(4 * n))  # 0 picks the null
    for i, index in enumerate(at, start=1):
        picks[index] = i
    given = pa.concat_arrays([pa.nulls(1, pa.string()), string_array([values[k] for k in at])])
    return given.take(from_buffers(pa.int32(), n, picks))


def parse_file(data: Any, seen_shapes: set[tuple[Any, ...]]) -> PlainFile | None:
    """The events of a file's bytes (any buffer), or None: the file holds a line the C reader leaves to
    Python. ``seen_shapes``: the shapes this worker gave out already
    (``ingest.spark.parse``), added to."""
    got = _plainjson.parse(data)
    if got is None:
        return None
    n, lines, ops, collection, key, before, after, position, ts, snapshot, (listed, names), found = got
    shapes = {}
    for index, coll, key_names, row_names in found:
        this = (coll, key_names, row_names)
        if this not in seen_shapes:
            seen_shapes.add(this)
            shapes[index] = orjson.dumps({"key": sorted(key_names), "columns": row_names}).decode()
    columns = {
        "collection": _strings(n, collection),
        "op": char_array(ops),
        "key": _strings(n, key),
        "before": _strings(n, before),
        "after": _strings(n, after),
        "position": _strings(n, position, pa.binary()),
        "source_ts_ms": from_buffers(pa.int64(), n, ts),
        "snapshot": _strings(n, snapshot),
        "line": from_buffers(pa.int64(), n, lines),
        "unchanged": pa.Array.from_buffers(
            pa.list_(pa.string()),
            n,
            [None, pa.py_buffer(listed)],
            children=[_strings(len(names[1]) // 4 - 1, names)],
        ),
    }
    return PlainFile(n, columns, shapes)
