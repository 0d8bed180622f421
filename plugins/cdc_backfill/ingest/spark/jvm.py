"""Debezium JSON lines parsed on the JVM: the same events as ``events.debezium`` gives, without a
Python worker in the path of the common record.

One ``from_json`` per line reads every layout at once (the value alone, ``{key, value}``, each with or
without the JSON converter's ``{schema, payload}`` wrapper): rows stay raw JSON text, as the parsed
rows carry them; the position, key, collection, timestamp and unchanged columns are Spark columns.

A line goes to the Python parser instead (``route``) where this path cannot give exactly what it
would: a record that is not valid JSON or not a change of a row (its quarantine reason is Python's),
a DataWorks record, a transaction marker, a schema change, a truncate or a message, a wrapper naming
a semantic type whose raw value differs from its meaning here (decimals as bytes, times in millis or
nanos), a position element that is no plain integer, a record without a key whose collection's key
is not known. A whole file goes there when it is one JSON document (the fixture form) or holds a
PostgreSQL change after a connector restart whose place needs the lines before it
(``events.positions.PgRestartOrder``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_backfill.events.model import UNAVAILABLE

# ``route`` of a parsed row: None (parsed here), or which Python parse takes the line or the file
BY_LINE, BY_FILE = "line", "file"

_S = T.StringType()
_SOURCE_FIELDS = (
    "connector schema table db commit_lsn lsn sequence change_lsn event_serial_no scn commit_scn file "
    "pos row ts_ms snapshot"
).split()
_SOURCE = T.StructType([T.StructField(n, _S) for n in _SOURCE_FIELDS])
# what a change value holds; a StringType field keeps an object's JSON text as it was written
_ENVELOPE = [
    T.StructField("before", _S),
    T.StructField("after", _S),
    T.StructField("op", _S),
    T.StructField("source", _SOURCE),
    T.StructField("ts_ms", _S),
]
_WRAPPED = [T.StructField("schema", _S), T.StructField("payload", T.StructType(_ENVELOPE))]
_BAD = "_bad"  # the corrupt-record field: set when the line is not JSON or a field has another shape
LINE_SCHEMA = T.StructType(
    [
        T.StructField("key", _S),
        T.StructField("value", T.StructType([*_WRAPPED, *_ENVELOPE])),
        T.StructField("offset", _S),
        T.StructField("partition", _S),
        *_WRAPPED,
        *_ENVELOPE,
        T.StructField(_BAD, _S),
    ]
)
_KEY_PART = T.StructType([T.StructField("schema", _S), T.StructField("payload", _S)])
_JSON_OPTIONS = {"columnNameOfCorruptRecord": _BAD, "allowNonNumericNumbers": "false", "mode": "PERMISSIVE"}

_UNAVAILABLE_B64 = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
_PLACEHOLDERS = (UNAVAILABLE, f'["{UNAVAILABLE}"]', _UNAVAILABLE_B64)
# Semantic types whose raw JSON value is not what the log's typing reads it as (it reads digits as
# days, microseconds after midnight, microseconds since the epoch; decimals as decimal text): the
# Python parser decodes these by the wrapper's schema.
_DECODED_NAMES = (
    r'"name"\s*:\s*"(org\.apache\.kafka\.connect\.data\.(Decimal|Timestamp|Time)|io\.debezium\.time\.'
    r'(Timestamp|Time|NanoTime|NanoTimestamp)|io\.debezium\.data\.VariableScaleDecimal)"'
)
# A PostgreSQL change after a connector restart: ``source.sequence`` starts with null
SEQUENCE_RESTART = r'"sequence"\s*:\s*"?\[\s*null'
_DIGITS = r"^[0-9]{1,18}$"  # a non-negative integer a bigint holds
_PG_LSN = r"^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$"
_SQLSERVER_LSN = r"^[0-9A-Fa-f]{8}:[0-9A-Fa-f]{8}:[0-9A-Fa-f]{4}$"


def parsed_lines(
    lines: DataFrame,
    collection: str | None = None,
    key_columns: Mapping[str, Sequence[str]] | None = None,
) -> DataFrame:
    """``(file, line, text)`` rows of Debezium JSON lines to parsed rows: the events parsed here, and the
    lines (``route`` = ``BY_LINE``, ``text`` kept) the Python parser takes. ``collection``: the table of
    records that do not name one; ``key_columns``: the key of records without their Kafka key."""
    position, pos_ok = _position()
    return (
        lines.select("file", "line", "text", F.from_json("text", LINE_SCHEMA, _JSON_OPTIONS).alias("r"))
        .select("file", "line", "text", *_record_parts())
        .select("*", _connector().alias("connector"))
        .select(
            "*",
            _collection(collection).alias("collection"),
            position.alias("position"),
            pos_ok.alias("pos_ok"),
        )
        .select("*", _key(key_columns).alias("key"))
        .where(~_tombstone())  # no change: the Python parser gives no event for it either
        .select(
            "file",
            "line",
            F.when(_route(), F.lit(BY_LINE)).alias("route"),
            F.when(_route(), F.col("text")).alias("text"),
            *_event_columns(),
        )
    )


def _record_parts() -> list[Column]:
    """The value (unwrapped), its schema, the key part (unwrapped), its schema, and the delivery offset,
    whichever layout the line has (``events.debezium.split_record`` and ``unwrap``)."""
    r = F.col("r")
    pair = r["op"].isNull() & r["payload"].isNull() & r["value"].isNotNull()
    top_wrapped = r["op"].isNull() & r["payload"].isNotNull() & r["schema"].isNotNull()
    value_wrapped = pair & r["value"]["op"].isNull() & r["value"]["payload"].isNotNull()
    env = {}
    for f in _ENVELOPE:
        env[f.name] = (
            F.when(top_wrapped, r["payload"][f.name])
            .when(value_wrapped, r["value"]["payload"][f.name])
            .when(pair, r["value"][f.name])
            .otherwise(r[f.name])
        )
    value_schema = F.when(top_wrapped, r["schema"]).when(value_wrapped, r["value"]["schema"])
    key_part = F.from_json(F.when(pair, r["key"]), _KEY_PART)
    key_wrapped = key_part["schema"].isNotNull() & key_part["payload"].isNotNull()
    offset = F.when(pair, r["offset"])
    return [
        r[_BAD].alias("bad"),
        *(v.alias(k) for k, v in env.items()),
        value_schema.alias("value_schema"),
        F.when(key_wrapped, key_part["schema"]).alias("key_schema"),
        F.when(key_wrapped, key_part["payload"]).otherwise(F.when(pair, r["key"])).alias("key_payload"),
        offset.alias("offset"),
        F.when(offset.isNotNull(), F.coalesce(F.when(pair, r["partition"]), F.lit("0"))).alias("partition"),
    ]


def _connector() -> Column:
    """The connector the source block names (lower case); null when it names none: the Python parser
    tells those by their fields, some of which may be null, which this path cannot see."""
    return F.lower(F.nullif(F.col("source")["connector"], F.lit("")))


def _collection(hint: str | None) -> Column:
    src = F.col("source")
    schema, table, db = (F.nullif(src[n], F.lit("")) for n in ("schema", "table", "db"))

    def name(a: Column, b: Column) -> Column:  # names.collection_name
        dotted = a.contains(".") | b.contains(".")
        quoted = F.concat(F.lit('"'), a, F.lit('"."'), b, F.lit('"'))
        return F.when(dotted, quoted).otherwise(F.concat(a, F.lit("."), b))

    mysql = (F.col("connector") == "mysql") & db.isNotNull() & table.isNotNull()
    return (
        F.when(mysql, name(db, table))
        .when(schema.isNotNull() & table.isNotNull(), name(schema, table))
        .otherwise(F.lit(hint))
    )


def _hex_of_digits(value: Column) -> Column:
    """The hex digits of a decimal integer's text (at most 18 digits: what a bigint holds; null for any
    other text, which the position's check sends to Python)."""
    return F.when(F.trim(value).rlike(_DIGITS), F.conv(F.trim(value), 10, 16))


def _hex_of_pg_lsn(value: Column) -> Column:
    """The hex digits of a PostgreSQL LSN, as Debezium's integer or as the server's text ``16/B374D848``."""
    hi, lo = F.split_part(value, F.lit("/"), F.lit(1)), F.split_part(value, F.lit("/"), F.lit(2))
    return F.when(value.contains("/"), F.concat(hi, F.lpad(lo, 8, "0"))).otherwise(_hex_of_digits(value))


def _pg_lsn_ok(value: Column) -> Column:
    return value.rlike(_PG_LSN) | F.trim(value).rlike(_DIGITS)


def _element(hex_digits: Column) -> Column:
    """One element of ``events.positions.position_key`` as hex: its byte count, then its big-endian
    bytes without leading zeros (none at all for 0)."""
    digits = F.regexp_replace(hex_digits, "^0+", "")
    even = F.when(F.length(digits) % 2 == 1, F.concat(F.lit("0"), digits)).otherwise(digits)
    return F.concat(F.lpad(F.hex(F.shiftright(F.length(even), 1)), 2, "0"), even)


def _position() -> tuple[Column, Column]:
    """(position key, whether every element is a plain integer) by connector, as
    ``events.debezium._position`` places it; a change needing ``PgRestartOrder`` is not ok here."""
    src, off = F.col("source"), F.col("offset")
    ok_digits = lambda c: F.trim(c).rlike(_DIGITS)  # noqa: E731
    by_offset = ([_element(_hex_of_digits(F.col("partition"))), _element(_hex_of_digits(off))],
                 ok_digits(F.col("partition")) & ok_digits(off))  # fmt: skip

    def choose(*cases: tuple[Column, list[Column], Column]) -> tuple[Column, Column]:
        key, ok = F.lit(""), F.lit(True)  # no position at all: the empty key, as the Python parser gives
        for when, elements, valid in reversed(cases):
            key = F.when(when, F.concat(*elements) if elements else F.lit("")).otherwise(key)
            ok = F.when(when, valid).otherwise(ok)
        return key, ok

    seq = F.from_json(src["sequence"], T.ArrayType(_S))
    not_a_pair = src["sequence"].isNotNull() & F.coalesce(F.size(seq) != 2, F.lit(True))
    pg_key, pg_ok = choose(
        (src["commit_lsn"].isNotNull(),
         [_element(_hex_of_pg_lsn(src["commit_lsn"])), _element(_hex_of_pg_lsn(src["lsn"]))],
         _pg_lsn_ok(src["commit_lsn"]) & F.coalesce(_pg_lsn_ok(src["lsn"]), F.lit(False))),
        (off.isNotNull(), *by_offset),
        (not_a_pair, [], F.lit(False)),
        (src["sequence"].isNotNull() & seq[1].isNotNull(),
         [_element(_hex_of_digits(seq[0])), _element(_hex_of_digits(seq[1]))],
         (F.size(seq) == 2) & F.coalesce(ok_digits(seq[0]) & ok_digits(seq[1]), F.lit(False))),
        (src["lsn"].isNotNull(), [_element(_hex_of_pg_lsn(src["lsn"]))] * 2, _pg_lsn_ok(src["lsn"])),
    )  # fmt: skip
    change, serial = src["change_lsn"], src["event_serial_no"]
    sqlserver_lsn = lambda c: _element(F.regexp_replace(c, ":", ""))  # noqa: E731
    ss_key, ss_ok = choose(
        (src["commit_lsn"].isNotNull(),
         [sqlserver_lsn(src["commit_lsn"]),
          F.when(change.isNull(), _element(F.lit("0"))).otherwise(sqlserver_lsn(change)),
          _element(F.coalesce(_hex_of_digits(serial), F.lit("0")))],
         src["commit_lsn"].rlike(_SQLSERVER_LSN) & F.coalesce(change.rlike(_SQLSERVER_LSN), F.lit(True))
         & F.coalesce(ok_digits(serial), F.lit(True))),
        (off.isNotNull(), *by_offset),
    )  # fmt: skip
    scn, commit_scn = src["scn"], src["commit_scn"]
    either = F.coalesce(scn, commit_scn)
    ora_key, ora_ok = choose(
        (either.isNotNull(),
         [_element(_hex_of_digits(F.coalesce(commit_scn, scn))), _element(_hex_of_digits(either))],
         ok_digits(either) & F.coalesce(ok_digits(commit_scn), F.lit(True))),
        (off.isNotNull(), *by_offset),
    )  # fmt: skip
    binlog = src["file"]
    index = F.regexp_extract(binlog, r"\.([^.]*)$", 1)
    my_key, my_ok = choose(
        (binlog.contains(".") & src["pos"].isNotNull(),
         [_element(_hex_of_digits(index)), _element(_hex_of_digits(src["pos"])),
          _element(_hex_of_digits(F.coalesce(F.nullif(src["row"], F.lit("")), F.lit("0"))))],
         ok_digits(index) & ok_digits(src["pos"]) & F.coalesce(ok_digits(src["row"]), F.lit(True))),
        (off.isNotNull(), *by_offset),
    )  # fmt: skip
    other_key, other_ok = choose((off.isNotNull(), *by_offset))
    connector = F.col("connector")
    restart = (
        (connector == "postgresql")
        & src["commit_lsn"].isNull()
        & off.isNull()
        & src["sequence"].isNotNull()
        & seq[1].isNotNull()
        & seq[0].isNull()
    )
    key = (
        F.when(connector == "postgresql", pg_key)
        .when(connector == "sqlserver", ss_key)
        .when(connector == "oracle", ora_key)
        .when(connector == "mysql", my_key)
        .otherwise(other_key)
    )
    ok = (
        F.when(connector == "postgresql", pg_ok & ~restart)
        .when(connector == "sqlserver", ss_ok)
        .when(connector == "oracle", ora_ok)
        .when(connector == "mysql", my_ok)
        .otherwise(other_ok)
    )
    return F.unhex(key), F.coalesce(ok, F.lit(False))


def _key(key_columns: Mapping[str, Sequence[str]] | None) -> Column:
    """The record's Kafka key (JSON text) when it kept one; else the collection's key columns taken from
    the row, each value as it was written (``events.debezium._event_key``); null when neither."""
    kept = F.col("key_payload")
    if not key_columns:
        return kept
    row = F.coalesce(F.col("after"), F.col("before"))
    from_row = F.lit(None).cast(_S)
    for coll, cols in sorted(key_columns.items(), reverse=True):
        schema = T.StructType([T.StructField(c, T.VariantType()) for c in cols])
        values = F.from_json(row, schema)
        complete = F.lit(True)
        for c in cols:
            complete = complete & values[c].isNotNull()  # a JSON null is a variant null, not NULL
        from_row = F.when((F.col("collection") == coll) & complete, F.to_json(values)).otherwise(from_row)
    return F.coalesce(kept, from_row)


def _tombstone() -> Column:
    """A ``{key, value}`` record whose value is null (log compaction's delete marker), seen whole."""
    r = F.col("r")
    return F.coalesce(
        F.col("bad").isNull()
        & F.col("op").isNull()
        & F.col("text").rlike(r'"value"\s*:\s*null\s*\}\s*$')
        & F.col("r")["op"].isNull()
        & r["payload"].isNull()
        & r["value"].isNull(),
        F.lit(False),
    )


def _route() -> Column:
    """Whether the Python parser takes the line (see the module's docstring)."""
    op, before, after = F.col("op"), F.col("before"), F.col("after")
    is_object = lambda c: c.isNull() | c.startswith("{")  # noqa: E731
    wrapper = F.concat_ws(" ", F.col("value_schema"), F.col("key_schema"))
    return ~F.coalesce(
        F.col("bad").isNull()
        & op.isin("c", "u", "d", "r")
        & F.col("connector").isNotNull()
        & F.col("collection").isNotNull()
        & F.col("pos_ok")
        & is_object(before)
        & is_object(after)
        & (after.isNotNull() | (op == "d"))
        & (before.isNotNull() | (op != "d") | F.col("key_payload").isNotNull())
        & F.col("key").startswith("{")
        & ~wrapper.rlike(_DECODED_NAMES)
        & F.rtrim(F.col("text")).endswith("}")
        & ~F.col("text").contains("}{"),  # two records run together: not JSON to the Python parser
        F.lit(False),
    )


def _ts() -> Column:
    """When the change happened in the source, else when the connector read it; a bad one is null."""
    as_long = lambda c: F.when(F.trim(c).rlike(_DIGITS), F.trim(c).cast("long"))  # noqa: E731
    return F.coalesce(as_long(F.col("source")["ts_ms"]), as_long(F.col("ts_ms")))


def _unchanged() -> Column:
    """The columns ``after`` sends Debezium's unavailable-value placeholder for, in the row's order."""
    after = F.col("after")
    marked = after.contains(UNAVAILABLE) | after.contains(_UNAVAILABLE_B64)
    values = F.from_json(after, T.MapType(_S, _S))
    placeholder = lambda k, v: v.isin(*_PLACEHOLDERS)  # noqa: E731
    return F.when(marked, F.map_keys(F.map_filter(values, placeholder))).otherwise(
        F.array().cast(T.ArrayType(_S))
    )


def _event_columns() -> list[Column]:
    """The parsed rows' event columns (null on a routed line). ``after`` keeps a placeholder the
    Python parser leaves out: ``unchanged`` names its column, and the log's typing nulls it."""
    routed = _route()
    snapshot = F.lower(F.col("source")["snapshot"])

    def event(c: Column) -> Column:
        return F.when(~routed, c)

    return [
        event(F.col("collection")).alias("collection"),
        event(F.col("op")).alias("op"),
        event(F.col("key")).alias("key"),
        event(F.col("before")).alias("before"),
        event(F.col("after")).alias("after"),
        event(_unchanged()).alias("unchanged"),
        event(F.col("position")).alias("position"),
        event(_ts()).alias("source_ts_ms"),
        event(F.concat(F.lit("debezium-"), F.col("connector"))).alias("format"),
        event(snapshot).alias("snapshot"),
        (~routed & F.col("value_schema").isNotNull()).alias("wrapped"),
    ]
