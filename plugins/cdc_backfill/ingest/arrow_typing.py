"""One collection's events of a file the C reader read (``ingest.plain``), typed into the log's Arrow
columns in the parse's own worker: the JSON texts ``key`` and ``after`` parsed once more, by Arrow's
JSON reader, never handed to the JVM.

The JVM's typing (``eventlog.spark.rows.as_log_rows``) reads every form Debezium writes a value in.
This one reads only the forms where both give the same value by construction, checked over a whole
column at once: a kind it does not read (bytea, time, arrays, ``real``, numeric without precision), a
value of another JSON type or text of another form (a decimal with an exponent, a timestamp without
its zone), a value out of the column's range: ``typed_events`` returns None, and the events go the
JVM's way. ``tests/ingest/test_typed.py`` holds both ways to the same rows.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from cdc_backfill.arrowbuf import repeated_string
from cdc_backfill.eventlog import counts
from cdc_backfill.eventlog.schema import LINE, OP, OPS, ORIGIN, POSITION, TS_MS, UNCHANGED, LogVersion
from cdc_backfill.files import write_parquet
from cdc_backfill.landing.layout import typed_stage_dir
from cdc_backfill.pgtypes import PgColumn, arrow_type, decimal_shape

log = logging.getLogger(__name__)

# A staged log file's counts, in this order: its events, then a manifest's counts (``eventlog.counts``)
TALLY = ("events", *counts.KEYS)


@dataclass(frozen=True)
class Typing:
    """What an ingest's workers type and write themselves: the collections whose columns the landing
    knew before the parse (each one's log version and key), the run's staging folder, and the fewest
    events of a collection in one file worth a log file of their own (fewer go the JVM's way, which
    puts every file's few events into one log file)."""

    stage: str
    targets: Mapping[str, tuple[LogVersion, tuple[str, ...]]]
    min_events: int
    # the driver's S3 settings (``storage.s3_settings``), for a staging folder on S3: a worker's
    # environment is the JVM's as it started, not the driver's now
    s3: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Staged:
    """A log file a worker wrote: its collection, path, greatest position and ``TALLY``."""

    collection: str
    path: str
    last: bytes
    tally: tuple[int, ...]


# The texts Debezium writes for a decimal in string mode, and for a timestamp with time zone (ISO-8601,
# at most microseconds, a zone always): forms Spark's cast and Arrow's read alike
_DECIMAL = r"^-?[0-9]+(\.[0-9]+)?$"
_ZONED = (
    r"^[0-9]{4}-(0[1-9]|1[0-2])-[0-3][0-9]T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,6})?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})$"
)


def json_type(col: PgColumn) -> pa.DataType | None:
    """The JSON type a column's value is read as here, or None where this reader leaves the column to the
    JVM (pure). Dates and timestamps without zone are Debezium's numbers (days, microseconds)."""
    kind = col.kind
    if kind == "int":
        return pa.int64()
    if kind == "float":
        return pa.float64() if col.type != "real" else None  # float32 from the text, not from a double
    if kind == "bool":
        return pa.bool_()
    if kind == "numeric":
        return pa.string() if decimal_shape(col) else None
    if kind == "date":
        return pa.int32()
    if kind == "timestamp":
        return pa.int64()
    if kind in ("timestamptz", "text"):  # text: every other type Debezium writes as a JSON string
        return pa.string()
    return None  # time, bytea (base64), arrays


def readable(columns: Sequence[PgColumn]) -> bool:
    """Whether every column is of a kind this reader types (pure)."""
    return all(json_type(c) is not None for c in columns)


def _read(texts: pa.Array, schema: pa.Schema) -> pa.Table | None:
    """JSON objects, one a value, as ``schema``'s columns; None where a value does not fit its type."""
    if len(texts) == 0:
        return schema.empty_table()
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    lines = pc.binary_join_element_wise(texts, "", "\n")  # each text and its newline, back to back
    offsets = memoryview(lines.buffers()[1]).cast("i")  # int32: a file's texts are below 2 GiB
    data = lines.buffers()[2][offsets[lines.offset] : offsets[lines.offset + len(lines)]]
    try:
        table = pj.read_json(
            pa.BufferReader(data),
            read_options=pj.ReadOptions(use_threads=False, block_size=max(1 << 20, data.size + 1)),
            parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return table.select(schema.names) if table.num_rows == len(texts) else None


def _spread(table: pa.Table, present: pa.Array) -> pa.Table:
    """A table of the rows where ``present`` is true, stretched to every row (null elsewhere)."""
    index = pc.subtract(pc.cumulative_sum(present.cast(pa.int32())), 1)
    return table.take(pc.if_else(present, index, pa.scalar(None, pa.int32()))).combine_chunks()


def _all(mask: pa.Array) -> bool:
    return bool(pc.all(mask).as_py() in (True, None))


def _lake(col: PgColumn, value: pa.Array) -> pa.Array | None:
    """A value read as ``json_type`` in the column's lake type; None where a value is of another form
    or out of range."""
    kind, target = col.kind, arrow_type(col)
    try:
        if kind == "numeric":
            return pc.cast(value, target) if _all(pc.match_substring_regex(value, _DECIMAL)) else None
        if kind == "timestamptz":
            return pc.cast(value, target) if _all(pc.match_substring_regex(value, _ZONED)) else None
        return pc.cast(value, target)  # a safe cast: an integer out of the column's range raises
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def typed_events(
    columns: Mapping[str, pa.Array],
    origin: str,
    collection: str,
    version: LogVersion,
    key: Sequence[str],
) -> pa.Table | None:
    """The collection's events among ``columns`` (``PlainFile.columns``) as rows of its log files in
    ``version``'s schema, in position order; None where a value is left to the JVM (above). A delete's
    key values come from its key, as the JVM's typing takes them."""
    if not readable(version.columns):
        return None
    picked = pc.and_(pc.equal(columns["collection"], collection), pc.is_in(columns["op"], pa.array(OPS)))
    ev = {name: columns[name].filter(picked) for name in ("op", "key", "after", "position", "source_ts_ms",
                                                           "unchanged", "line")}  # fmt: skip
    schema = pa.schema([(c.name, json_type(c)) for c in version.columns])
    has_after = pc.is_valid(ev["after"])
    read = _read(ev["after"].filter(has_after), schema)
    if read is None:
        return None
    after = _spread(read, has_after)
    keyed = [c for c in version.columns if c.name in key]
    # the key's text is read where the row lacks a key value (a delete's row), as the JVM reads it
    lacking = pa.repeat(False, len(has_after))
    for c in keyed:
        lacking = pc.or_(lacking, pc.is_null(after.column(c.name)))
    lacking = pc.and_(lacking, pc.is_valid(ev["key"]))
    values = {c.name: after.column(c.name).chunk(0) for c in version.columns}
    if pc.any(lacking).as_py():
        key_read = _read(ev["key"].filter(lacking), pa.schema([(c.name, json_type(c)) for c in keyed]))
        if key_read is None:
            return None
        from_key = _spread(key_read, lacking)
        for c in keyed:
            values[c.name] = pc.coalesce(values[c.name], from_key.column(c.name).chunk(0))
    lake = {}
    for c in version.columns:
        typed = _lake(c, values[c.name])
        if typed is None:
            return None
        lake[c.name] = typed
    n = len(ev["op"])
    meta = {
        POSITION: ev["position"],
        OP: ev["op"],
        TS_MS: ev["source_ts_ms"],
        UNCHANGED: ev["unchanged"],
        ORIGIN: repeated_string(origin, n),
        LINE: ev["line"],
    }
    out = version.arrow_schema()
    table = pa.Table.from_arrays([{**meta, **lake}[f.name] for f in out], schema=out)
    position = table.column(POSITION)
    if n > 1 and pc.any(pc.less(position.slice(1), position.slice(0, n - 1))).as_py():
        table = table.sort_by(POSITION)
    return table


def tally(table: pa.Table) -> tuple[int, ...]:
    """A log table's ``TALLY``: ``eventlog.counts.op_counts`` of its ops counted over whole columns."""
    ops = table.column(OP)
    left = pc.fill_null(pc.greater(pc.list_value_length(table.column(UNCHANGED)), 0), False)

    def by_op(values: pa.ChunkedArray) -> dict[str, int]:
        return {r["values"]: r["counts"] for r in pc.value_counts(values).to_pylist()}

    found = counts.op_counts(by_op(ops), by_op(ops.filter(left)))
    return (table.num_rows, *(found[k] for k in counts.KEYS))


def stage_typed(
    columns: Mapping[str, pa.Array], origin: str, typing: Typing
) -> tuple[list[Staged], pa.Array | None]:
    """Each target collection's events of one C-read file (``PlainFile.columns``) typed and written into
    the run's staging folder, where there are enough of them and ``typed_events`` reads them all; and
    which events are left (a mask; None: all of them). A task run again writes the same file again: its
    name is the input file's and the collection's."""
    os.environ.update(typing.s3)
    row = pc.is_in(columns["op"], pa.array(OPS))
    found = pc.value_counts(columns["collection"].filter(row)).to_pylist()
    staged = []
    for r in found:
        collection, n = r["values"], r["counts"]
        if collection not in typing.targets or n < typing.min_events:
            continue
        version, key = typing.targets[collection]
        table = typed_events(columns, origin, collection, version, key)
        if table is None:
            log.info("%s events of %s in %s left to the JVM's typing", n, collection, origin)
            continue
        name = f"part-t-{hashlib.sha256(origin.encode()).hexdigest()[:24]}.parquet"
        folder = typed_stage_dir(typing.stage, collection)
        folder.mkdir(parents=True, exist_ok=True)
        path = write_parquet(folder / name, table)
        staged.append(Staged(collection, str(path), table.column(POSITION)[-1].as_py(), tally(table)))
    if not staged:
        return [], None
    taken = pc.and_(row, pc.is_in(columns["collection"], pa.array([s.collection for s in staged])))
    return staged, pc.invert(pc.fill_null(taken, False))
