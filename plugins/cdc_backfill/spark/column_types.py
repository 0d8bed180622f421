"""Column types on Spark: a PostgreSQL column's Spark type (what Spark reads from a snapshot chunk), how
Debezium writes its value in an event, and the conversion from the one to the other (docs/design.md §5)."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_backfill.pgtypes import PgColumn, decimal_shape


def spark_type(col: PgColumn) -> T.DataType:
    """The Spark type of a column, matching what Spark reads from a snapshot chunk."""
    kind = col.kind
    if kind == "int":
        return {"smallint": T.ShortType(), "integer": T.IntegerType()}.get(col.type, T.LongType())
    if kind == "float":
        return T.FloatType() if col.type == "real" else T.DoubleType()
    if kind == "bool":
        return T.BooleanType()
    if kind == "date":
        return T.DateType()
    if kind == "numeric":
        shape = decimal_shape(col)
        return T.DecimalType(*shape) if shape else T.StringType()
    if kind == "timestamp":
        return T.TimestampNTZType()
    if kind == "timestamptz":
        return T.TimestampType()
    if kind == "bytea":
        return T.BinaryType()
    return T.StringType()


def debezium_json_type(col: PgColumn) -> T.DataType:
    """How the column's value is read out of a Debezium event's JSON (before conversion). Dates, times
    and timestamps are read as text: Debezium writes them as numbers (days, microseconds), and the
    parser writes them as ISO-8601 once it has decoded them with a ``{schema, payload}`` wrapper; a
    JSON number read as text is its digits."""
    kind = col.kind
    if kind in ("int", "float", "bool"):
        return spark_type(col)
    return T.StringType()  # numeric, dates and times, timestamptz, bytea (base64), text, json, uuid, arrays


_DIGITS = r"^-?[0-9]+$"


def from_debezium(col: PgColumn, value: Column) -> Column:
    kind = col.kind
    target = spark_type(col)
    digits = value.rlike(_DIGITS)
    if kind == "numeric":
        return value.cast(target)
    if kind == "date":
        days = F.date_add(F.lit("1970-01-01").cast("date"), value.cast("int"))
        return F.when(digits, days).otherwise(F.to_date(value))
    if kind == "timestamp":
        micros = F.timestamp_micros(value.cast("long")).cast(T.TimestampNTZType())
        return F.when(digits, micros).otherwise(F.to_timestamp_ntz(value))
    if kind == "time":
        # ISO-8601 of a decoded time keeps the fraction's trailing zeros; the server's text does not
        iso = F.regexp_replace(F.regexp_replace(value, r"(\.[0-9]*?)0+$", "$1"), r"\.$", "")
        return F.when(digits, time_text(value.cast("long"))).otherwise(iso)
    if kind == "array":
        return array_text(col, value)
    if kind == "timestamptz":
        return F.to_timestamp(value)
    if kind == "bytea":
        return F.unbase64(value)
    return value


def time_text(micros: Column) -> Column:
    """Microseconds after midnight as the server writes a time: ``HH:MM:SS[.ffffff]``, trailing zeros of
    the fraction left out (how chunks store it, read with COPY)."""
    secs = F.floor(micros / 1_000_000)
    frac = micros - secs * 1_000_000
    hms = F.format_string("%02d:%02d:%02d", F.floor(secs / 3600), F.floor(secs / 60) % 60, secs % 60)
    digits = F.regexp_replace(F.format_string("%06d", frac), "0+$", "")
    return (
        F.when(micros.isNull(), F.lit(None)).when(frac == 0, hms).otherwise(F.concat(hms, F.lit("."), digits))
    )


# An element of an array literal is quoted when it is empty, is NULL spelled as text, or holds a brace,
# comma, quote, backslash or white space (PostgreSQL's array_out rules).
_NEEDS_QUOTES = r'^$|^[Nn][Uu][Ll][Ll]$|[{},"\\\s]'


def array_text(col: PgColumn, value: Column) -> Column:
    """An array as the server writes it (``{1,NULL,"a b"}``), which is how chunks store arrays, from
    Debezium's JSON array (one dimension). A value that already is the server's text is kept."""
    elements = F.from_json(value, T.ArrayType(T.StringType()))
    boolean = col.type == "boolean[]"

    def element(x: Column) -> Column:
        text = F.when(x == "true", "t").when(x == "false", "f").otherwise(x) if boolean else x
        quoted = F.concat(F.lit('"'), F.regexp_replace(text, r'(["\\])', r"\\$1"), F.lit('"'))
        return F.when(x.isNull(), "NULL").when(text.rlike(_NEEDS_QUOTES), quoted).otherwise(text)

    literal = F.concat(F.lit("{"), F.array_join(F.transform(elements, element), ","), F.lit("}"))
    return F.when(value.startswith("["), literal).otherwise(value)


def event_schema(columns: Sequence[PgColumn]) -> T.StructType:
    return T.StructType([T.StructField(c.name, debezium_json_type(c)) for c in columns])
