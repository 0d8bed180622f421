"""A JVM fast path for landing files: the capture's own lines parsed by Spark's JSON functions.

:func:`native_landing_events` returns the rows of :func:`cdc_backfill.spark.landing.landing_events`
(same columns, types, files, line numbers and values) without parsing every line in a Python worker,
which bounds that path to about 42k events/s on local[2].

How a line is read:

1. Lines come from Spark's text reader. A line's number is its row index inside its split of the file
   (``monotonically_increasing_id`` is consecutive inside a partition) plus the lines of the file's
   earlier splits, from a small per-split aggregate: files may be split or packed several to a
   partition, and line numbers must still be the Python path's (``bytes.splitlines``, from 1).
2. A line that starts like the capture's (``{"key":``) is parsed once by ``from_json`` with a fixed
   schema whose leaves are all strings: objects come back as their JSON text (Jackson re-writes them).
3. The line is **native** only if putting those parts back together in the capture's byte layout
   (``capture/lines.py``: ``row_line`` for row events and truncates, ``message_line`` for ``m``) gives the
   line back exactly. That one comparison proves what a chain of cheap tests could not: the record is
   ``{"key", "value"}`` and nothing else (no wrapper, no Kafka offset, no duplicate names), ``key``,
   ``before`` and ``after`` are objects or null and not strings holding JSON, every scalar has the JSON
   type the capture writes, and Jackson's text of each object equals the line's (so its values are the
   ones ``orjson`` reads). Then the rules of ``events/debezium.py`` for this shape apply: the position
   is (``source.commit_lsn``, ``source.lsn``) as integers, the collection is ``schema.table`` quoted
   as ``names.collection_name`` quotes it, TOAST placeholders leave ``after`` for ``unchanged``.
4. Every other line (other formats and layouts, schema-wrapped records, Debezium's own layout,
   tombstones, floats Jackson writes differently, malformed JSON, blank lines, anything odd) goes to
   the Python parser, and comes back with its quarantine reason if it has one.

Values: ``key``, ``before`` and ``after`` are equal as JSON values to the Python path's; the bytes are
equal too for what the capture writes (compact JSON, integers, strings), as the layout check implies.
Every other column is equal as is.

The Python lines do not take a second pass: the split needs the parse, and a union of two filtered
branches evaluates its input once per branch (the parse would run twice). They go through an Arrow UDF
in the same projection that receives only those lines, null for every native one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, MapType, StringType, StructField, StructType

from cdc_backfill.events.model import UNAVAILABLE
from cdc_backfill.events.parse import DEFAULT_OPTIONS, ParseOptions, parse_lines
from cdc_backfill.spark.landing import (
    ARROW_SCHEMA,
    PARSED_SCHEMA,
    line_rows,
    parse_landing_files,
)
from cdc_backfill.spark.lines import BOM, binary_files, is_compressed, read_lines
from cdc_backfill.spark.positions import key_of_longs

log = logging.getLogger(__name__)

_S = StringType()
# The capture's source block, in the order it writes it, and whether each value is a JSON string.
_SOURCE = (
    ("version", True),
    ("connector", True),
    ("name", True),
    ("ts_ms", False),
    ("snapshot", True),
    ("db", True),
    ("schema", True),
    ("table", True),
    ("txId", False),
    ("commit_lsn", False),
    ("lsn", False),
)
# Every leaf a string: objects come back as their JSON text, written again by Jackson.
_LINE_SCHEMA = StructType(
    [
        StructField("key", _S),
        StructField(
            "value",
            StructType(
                [
                    StructField("before", _S),
                    StructField("after", _S),
                    StructField("source", StructType([StructField(n, _S) for n, _ in _SOURCE])),
                    StructField("op", _S),
                    StructField("ts_ms", _S),
                    StructField("message", _S),
                ]
            ),
        ),
    ]
)
_ROW_OPS = ("c", "u", "d", "r")
# source.snapshot values that Python's str(x).lower() leaves as they are (the capture writes "false").
_SNAPSHOT_VALUES = (
    "false",
    "true",
    "last",
    "first",
    "incremental",
    "first_in_data_collection",
    "last_in_data_collection",
)
# The TOAST placeholder as a JSON string, and as base64 (bytea); the array form goes to Python.
_UNAVAILABLE_B64 = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
_PLACEHOLDERS = (UNAVAILABLE, _UNAVAILABLE_B64)
# One `"name":"<placeholder>"` member of a compact JSON object, after its `{` or `,`; a name with an
# escape in it does not match (the line then goes to Python).
_PAIR = r'"([^"\\]*)":"(' + UNAVAILABLE + "|" + _UNAVAILABLE_B64 + ')"'

_ROW_STRUCT = StructType([f for f in PARSED_SCHEMA.fields if f.name not in ("file", "line")])
_ROWS_TYPE = ArrayType(_ROW_STRUCT)
_ARROW_ROWS = pa.list_(pa.struct([f for f in ARROW_SCHEMA if f.name not in ("file", "line")]))
_ROW_NAMES = [f.name for f in _ROW_STRUCT.fields]


# ---------------------------------------------------------------- the native parse


def _uint_ok(text: Column, digits: int) -> Column:
    """``text``, a number as Jackson writes it back, is a non-negative integer of at most ``digits``
    digits (orjson reads integers beyond 64 bits as floats: those lines go to Python)."""
    # Jackson writes an integer as plain digits and anything else with a '.' or an 'E' (which the cast
    # refuses), so its first character being a digit settles the sign
    return text.try_cast("bigint").isNotNull() & F.ascii(text).between(48, 57) & (F.length(text) <= digits)


def _or_null(c: Column) -> Column:
    return F.coalesce(c, F.lit("null"))


def _is_object(c: Column) -> Column:
    # Safe only after the layout check: the text then is the line's own, so '{' starts an object.
    return c.startswith("{")


def _source_text(src: Column) -> Column:
    parts: list[Column] = []
    for i, (name, quoted) in enumerate(_SOURCE):
        sep = "{" if i == 0 else ","
        value = src.getField(name)
        if quoted:
            parts += [F.lit(f'{sep}"{name}":"'), value, F.lit('"')]
        else:
            # a message outside a transaction has no transaction id
            parts += [F.lit(f'{sep}"{name}":'), F.coalesce(value, F.lit("null")) if name == "txId" else value]
    parts.append(F.lit("}"))
    return F.concat(*parts)


def _toast(df: DataFrame) -> DataFrame:
    """Adds ``_cdc_cut`` (``_cdc_after`` without its placeholder columns), ``_cdc_unchanged`` (their
    names) and ``_cdc_toast_ok``, from ``_cdc_after`` and ``_cdc_marked`` (it has a placeholder).

    Without lambdas (``map_filter``): Spark evaluates those outside generated code, and any of them in
    a stage makes it build a full row object for every row, marked or not. The pairs are cut out of
    the text; the cut is checked against the object read as a map of JSON texts (a string's text is
    its content, any other value's is not a placeholder's): the names cut must be exactly the map's
    entries that are gone, in order, and every entry left must be unchanged, else Python decides.
    """
    after, marked = F.col("_cdc_after"), F.col("_cdc_marked")
    cut = F.regexp_replace(after, "," + _PAIR + r"(?=[,}])", "")
    cut = F.regexp_replace(cut, r"^\{" + _PAIR + r"(?:,|(?=\}))", "{")
    df = df.withColumn("_cdc_cut", F.when(marked, cut).otherwise(after)).withColumn(
        "_cdc_unchanged",
        F.when(marked, F.regexp_extract_all(after, F.lit("[{,]" + _PAIR + r"(?=[,}])"), 1)).otherwise(
            F.array().cast(ArrayType(_S))
        ),
    )
    entries = F.from_json(after, MapType(_S, _S))
    kept = F.from_json(F.col("_cdc_cut"), MapType(_S, _S))
    names = F.col("_cdc_unchanged")
    ok = (
        # Python reads a repeated name as its last value; a map keeps both
        (F.size(F.array_distinct(F.map_keys(entries))) == F.size(entries))
        & (F.size(kept) + F.size(names) == F.size(entries))
        & (F.size(F.array_intersect(F.map_entries(entries), F.map_entries(kept))) == F.size(kept))
        & (F.array_except(F.map_keys(entries), F.map_keys(kept)) == names)
        & ~F.arrays_overlap(F.map_values(kept), F.array(*[F.lit(p) for p in _PLACEHOLDERS]))
        & ~after.contains(f'["{UNAVAILABLE}"]')
    )
    return df.withColumn("_cdc_toast_ok", F.when(marked, F.coalesce(ok, F.lit(False))).otherwise(F.lit(True)))


def native_rows(lines: DataFrame) -> DataFrame:
    """``(file, line, _cdc_text, _cdc_bom)`` lines plus ``_cdc_native`` (read here, never null) and
    ``_cdc_row`` (the line's one parsed row for a native line, in the struct of :data:`_ROW_STRUCT`).

    Built in steps of columns: a column used twice is computed once (Spark does not share work
    between uses of one expression inside AND or CASE).
    """
    c = F.col
    text = c("_cdc_text")
    parsed = lines.withColumn("_cdc_j", F.when(text.startswith('{"key":'), F.from_json(text, _LINE_SCHEMA)))
    df = parsed.select(
        "file", "line", "_cdc_text", "_cdc_bom",
        c("_cdc_j.key").alias("_cdc_key"),
        c("_cdc_j.value.before").alias("_cdc_before"),
        c("_cdc_j.value.after").alias("_cdc_after"),
        c("_cdc_j.value.source").alias("_cdc_src"),
        c("_cdc_j.value.op").alias("_cdc_op"),
        c("_cdc_j.value.ts_ms").alias("_cdc_ts"),
        c("_cdc_j.value.message").alias("_cdc_message"),
    )  # fmt: skip
    key, before, after, src = c("_cdc_key"), c("_cdc_before"), c("_cdc_after"), c("_cdc_src")
    op, ts = c("_cdc_op"), c("_cdc_ts")
    is_message = op == "m"
    source = _source_text(src)
    # The line must be the capture's bytes for what Jackson read (objects and numbers as Jackson writes
    # them back): one comparison settles the record's whole shape and every value's JSON type.
    capture_line = F.when(
        is_message,
        F.concat(
            F.lit('{"key":'), _or_null(key),
            F.lit(',"value":{"source":'), source,
            F.lit(',"op":"m","ts_ms":'), ts,
            F.lit(',"message":'), _or_null(c("_cdc_message")), F.lit("}}"),
        ),
    ).otherwise(
        F.concat(
            F.lit('{"key":'), _or_null(key),
            F.lit(',"value":{"before":'), _or_null(before),
            F.lit(',"after":'), _or_null(after),
            F.lit(',"source":'), source,
            F.lit(',"op":"'), op, F.lit('","ts_ms":'), ts, F.lit("}}"),
        )
    )  # fmt: skip
    df = df.withColumn("_cdc_layout", F.coalesce(text == capture_line, F.lit(False))).withColumn(
        "_cdc_marked",
        c("_cdc_layout") & (after.contains(f'"{UNAVAILABLE}"') | after.contains(f'"{_UNAVAILABLE_B64}"')),
    )
    df = _toast(df)
    schema, table, snapshot = src.getField("schema"), src.getField("table"), src.getField("snapshot")
    commit, lsn, src_ts = src.getField("commit_lsn"), src.getField("lsn"), src.getField("ts_ms")
    is_row = op.isin(*_ROW_OPS)
    common = (
        c("_cdc_layout")
        & (src.getField("connector") == "postgresql")
        & _uint_ok(commit, 19)
        & _uint_ok(lsn, 19)
        & _uint_ok(src_ts, 18)  # the Python path's int64 column holds 18 digits for sure
        & snapshot.isin(*_SNAPSHOT_VALUES)
        # Jackson reads an escaped lone surrogate (and writes it back the same); orjson refuses it
        & ~text.contains("\\uD")
        & ~c("_cdc_bom")
    )
    # events/debezium.py for this shape: a collection for everything but messages; for row events a
    # key that is an object and not a {schema, payload} wrapper, objects in before/after, an after row
    # for c/u/r; truncates look at nothing else.
    has_collection = (schema != "") & (table != "")
    key_ok = (
        key.isNotNull() & _is_object(key) & ~key.startswith('{"schema":') & ~key.startswith('{"payload":')
    )
    row_ok = (
        is_row
        & has_collection
        & key_ok
        & (before.isNull() | _is_object(before))
        & (after.isNull() | _is_object(after))
        & ((op == "d") | after.isNotNull())
        & c("_cdc_toast_ok")
    )
    native = F.coalesce(common & (is_message | ((op == "t") & has_collection) | row_ok), F.lit(False))
    df = df.withColumn("_cdc_native", native)

    dotted = schema.contains(".") | table.contains(".")
    collection = F.when(dotted, F.concat(F.lit('"'), schema, F.lit('"."'), table, F.lit('"'))).otherwise(
        F.concat(schema, F.lit("."), table)
    )
    none = F.lit(None).cast(_S)
    row = F.struct(
        F.when(is_message, none).otherwise(collection).alias("collection"),
        op.alias("op"),
        F.when(is_row, key).alias("key"),
        F.when(is_row, before).alias("before"),
        F.when(is_row, c("_cdc_cut")).alias("after"),
        F.when(is_row, c("_cdc_unchanged")).otherwise(F.array().cast(ArrayType(_S))).alias("unchanged"),
        key_of_longs(commit.try_cast("bigint"), lsn.try_cast("bigint")).alias("position"),
        src_ts.try_cast("bigint").alias("source_ts_ms"),
        F.lit("debezium-postgresql").alias("format"),
        F.when(is_message, none).otherwise(snapshot).alias("snapshot"),
        none.alias("quarantine_reason"),
        none.alias("record"),
    )  # fmt: skip
    return df.select(
        "file",
        "line",
        "_cdc_text",
        "_cdc_bom",
        "_cdc_native",
        F.when(c("_cdc_native"), row).alias("_cdc_row"),
    )


# ---------------------------------------------------------------- the Python lines


def _python_parser(options: ParseOptions) -> Any:
    from pyspark.sql.functions import arrow_udf

    @arrow_udf(_ROWS_TYPE)  # type: ignore[misc]
    def parse(texts: pa.Array) -> pa.Array:
        # Most batches are all null (every line native): answer those without a Python loop.
        if texts.null_count == len(texts):
            return pa.nulls(len(texts), _ARROW_ROWS)
        out: list[list[dict[str, Any]] | None] = []
        for raw in texts.to_pylist():
            if raw is None:
                out.append(None)
                continue
            rows = []
            for _lineno, item in parse_lines([raw], None, options):
                rows.extend(dict(zip(_ROW_NAMES, r, strict=True)) for r in line_rows(item))
            out.append(rows)  # [] for a blank line or a tombstone: no row, as in landing_events
        return pa.array(out, type=_ARROW_ROWS)

    return parse


def parse_native_lines(lines: DataFrame, options: ParseOptions = DEFAULT_OPTIONS) -> DataFrame:
    """Lines from :func:`read_landing_lines` to the rows of ``landing_events`` (events and quarantined)."""
    native = F.col("_cdc_native")
    raw = F.col("_cdc_text").cast("binary")
    raw = F.when(F.col("_cdc_bom"), F.concat(F.lit(BOM), raw)).otherwise(raw)
    # The Python UDF's operator keeps every input row until its batch comes back: the line's text is
    # left out of those rows (null for a native line), as the parsed row already holds what is needed.
    shaped = native_rows(lines).select(
        "file", "line", "_cdc_native", "_cdc_row", F.when(~native, raw).alias("_cdc_py")
    )
    python = _python_parser(options)(F.col("_cdc_py"))
    rows = F.when(native, F.array(F.col("_cdc_row")).cast(_ROWS_TYPE)).otherwise(python)
    exploded = shaped.select("file", "line", F.explode(rows).alias("_cdc_r"))
    return exploded.select(
        *[
            F.col(f.name) if f.name in ("file", "line") else F.col("_cdc_r").getField(f.name).alias(f.name)
            for f in PARSED_SCHEMA.fields
        ]
    )


def native_landing_events(
    spark: SparkSession,
    path: str | Sequence[str],
    options: ParseOptions = DEFAULT_OPTIONS,
    pattern: str = "*.json*",
) -> DataFrame:
    """``landing_events(spark, path, options)`` with the capture's lines parsed in the JVM.

    ``path``: a landing folder (its files matching ``pattern``, recursively) or a list of files.
    """
    if options.format == "dataworks":
        # every line is read as DataWorks: nothing here applies
        files = binary_files(spark, path, pattern)
        return parse_landing_files(files, options)
    lines, some_compressed = read_lines(spark, path, pattern)
    parsed = parse_native_lines(lines, options)
    if not some_compressed:
        return parsed
    compressed = binary_files(spark, path, pattern).where(is_compressed(F.col("path")))
    # binaryFile filters on `path` before it reads a file's content: only those files are read
    return parsed.unionByName(parse_landing_files(compressed, options))
