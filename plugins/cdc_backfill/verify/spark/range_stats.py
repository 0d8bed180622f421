"""The state's side of verify as DataFrame -> DataFrame functions: per key range, the row count and the
sum of the rows' hashes, computed exactly as the source's SQL computes them (``cdc_backfill.verify``).

The transforms take no session and do no I/O; :func:`compare_state` and :func:`verify_collection` are
the entry points the CLI and Airflow call.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_backfill.names import spark_ident
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.spark.column_types import spark_type
from cdc_backfill.verify import forms
from cdc_backfill.verify.compare import RangeStats, Report
from cdc_backfill.verify.ranges import Bound, KeyRange
from cdc_backfill.verify.source_side import SourceSide

if TYPE_CHECKING:
    import sqlalchemy as sa

    from cdc_backfill.state.table import StateVersion

MICROS_PER_DAY = 86_400_000_000
HASH_TYPE = T.DecimalType(38, 0)  # a sum of 60-bit hashes stays exact far beyond any table's size


def _typed(col: PgColumn) -> Column:
    return F.col(spark_ident(col.name)).cast(spark_type(col))


def _ntz_micros(c: Column) -> Column:
    """Microseconds since the epoch of a wall-clock timestamp, whatever the session's time zone
    (casting a TIMESTAMP_NTZ to an instant would go through the session's zone and its DST gaps)."""
    day = F.unix_date(c.cast(T.DateType())).cast(T.LongType()) * F.lit(MICROS_PER_DAY)
    clock = (F.hour(c) * 3600 + F.minute(c) * 60).cast(T.LongType()) * F.lit(1_000_000)
    seconds = (F.date_part(F.lit("SECOND"), c) * 1_000_000).cast(T.LongType())  # decimal(8,6): exact
    return day + clock + seconds


def _bits(c: Column, java_class: str, method: str) -> Column:
    """The IEEE bits as a decimal integer (Spark has no cast for it: the JDK's own method, by reflection);
    every NaN as ``NaN``, as the source writes it."""
    bits = F.reflect(F.lit(java_class), F.lit(method), c)
    return F.when(c.isNull(), F.lit(None)).when(F.isnan(c), F.lit("NaN")).otherwise(bits)


def canonical(col: PgColumn) -> Column:
    """The canonical text of a column's value (``forms``); NULL stays NULL."""
    form = forms.value_form(col)
    c = _typed(col)
    if form == forms.NUMERIC_TEXT:
        return F.regexp_replace(c, forms.NUMERIC_TRIM, "$1")
    if form == forms.FLOAT4:
        return _bits(c, "java.lang.Float", "floatToRawIntBits")
    if form == forms.FLOAT8:
        return _bits(c, "java.lang.Double", "doubleToRawLongBits")
    if form == forms.DATE:
        return F.unix_date(c).cast(T.StringType())
    if form == forms.TIMESTAMP:
        return _ntz_micros(c).cast(T.StringType())
    if form == forms.TIMESTAMPTZ:
        return F.unix_micros(c).cast(T.StringType())
    if form == forms.BYTEA:
        return F.lower(F.hex(c))
    if form == forms.BPCHAR:
        return F.rtrim(c)
    return c.cast(T.StringType())  # int, decimal (plain, all its decimals), bool (true/false), text


def row_hash(columns: Sequence[PgColumn]) -> Column:
    """The first 60 bits of the md5 of the row's text, as an exact decimal."""
    parts = []
    for col in columns:
        v = canonical(col)
        parts.append(
            F.coalesce(
                F.concat(F.length(v).cast("string"), F.lit(forms.SEPARATOR), v), F.lit(forms.NULL_MARK)
            )
        )
    digest = F.substring(F.md5(F.concat(*parts)), 1, forms.HASH_HEX_DIGITS)
    return F.conv(digest, 16, 10).cast(HASH_TYPE)


def _comparable(col: PgColumn) -> Column:
    """What a key column is compared by (``forms.key_compare``), in PostgreSQL's order for it."""
    how = forms.key_compare(col)
    c = _typed(col)
    if how == forms.DATE:
        return F.unix_date(c)
    if how == forms.TIMESTAMP:
        return _ntz_micros(c)
    if how == forms.TIMESTAMPTZ:
        return F.unix_micros(c)
    if how == forms.BYTEA:
        return F.lower(F.hex(c))
    if how == forms.BPCHAR:
        return F.rtrim(c)
    if how == forms.TEXT:
        return c.cast(T.StringType())
    return c  # int, decimal, float4, float8, bool: the typed value


def _literal(col: PgColumn, text: str) -> Column:
    value = forms.spark_value(col, text)
    how = forms.key_compare(col)
    if how in (forms.INT, forms.FLOAT4, forms.FLOAT8):
        # the column's own type: a real compared with a double literal would be widened and miss
        return F.lit(value).cast(spark_type(col))
    if how == forms.DECIMAL:
        return F.lit(str(value)).cast(spark_type(col))
    if how in (forms.TIMESTAMP, forms.TIMESTAMPTZ):
        return F.lit(value).cast(T.LongType())
    return F.lit(value)


def key_le(key: Sequence[PgColumn], bound: Bound) -> Column:
    """``key <= bound`` in the source's order: lexicographic over the key columns."""
    cols = [_comparable(c) for c in key]
    vals = [_literal(c, t) for c, t in zip(key, bound.spark, strict=True)]
    result = cols[-1] <= vals[-1]
    for c, v in zip(reversed(cols[:-1]), reversed(vals[:-1]), strict=True):
        result = (c < v) | ((c == v) & result)
    return result


def range_index(key: Sequence[PgColumn], ranges: Sequence[KeyRange]) -> Column:
    """The index of the range a row's key falls in (the same CASE as the source's SQL)."""
    expr: Column | None = None
    for r in ranges:
        if r.hi is None:
            continue
        cond = key_le(key, r.hi)
        expr = F.when(cond, F.lit(r.index)) if expr is None else expr.when(cond, F.lit(r.index))
    last = F.lit(ranges[-1].index)
    return last if expr is None else expr.otherwise(last)


def range_stats(
    state: DataFrame, columns: Sequence[PgColumn], key: Sequence[PgColumn], ranges: Sequence[KeyRange]
) -> DataFrame:
    """``(_cdc_r, _cdc_rows, _cdc_hash)`` per range that has rows; the hash as exact decimal text.

    ``columns`` are the source's compared columns, in its order (the state's own order does not matter).
    """
    hashed = state.select(range_index(key, ranges).alias("_cdc_r"), row_hash(columns).alias("_cdc_h"))
    return hashed.groupBy("_cdc_r").agg(
        F.count(F.lit(1)).alias("_cdc_rows"), F.sum("_cdc_h").cast("string").alias("_cdc_hash")
    )


def compare_state(current: StateVersion, source: SourceSide, master: str = "local[*]") -> Report:
    """The state's range counts and hashes (Spark) against the source's, over the source's ranges.

    A caller's session (tests, a verify of several collections) is used and left running; else one is
    built for this comparison and stopped. Columns that differ are a VerifyError: no re-snapshot fixes that.
    """
    from pyspark.sql import SparkSession

    from cdc_backfill.spark.session import build_session
    from cdc_backfill.state.spark.frames import read_version

    existing = SparkSession.getActiveSession()
    spark = build_session("cdc_backfill_verify", master=master, lake=[current.table])
    try:
        return compare_frame(read_version(spark, current), source)
    finally:
        if existing is None:
            spark.stop()


def compare_frame(state: DataFrame, source: SourceSide) -> Report:
    """A state's rows (a version read, or one computed: ``verify.spark.at_position``) against the source's ranges."""
    from cdc_backfill.verify.compare import compare

    table = source.table
    stats = frame_stats(state, source)
    return compare(table.collection, [c.name for c in table.key], source.ranges, source.stats, stats)


def frame_stats(state: DataFrame, source: SourceSide) -> dict[int, RangeStats]:
    """A state's count and hash per range of the source's read (its columns must be the source's)."""
    from cdc_backfill.verify import VerifyError
    from cdc_backfill.verify.compare import RangeStats
    from cdc_backfill.verify.forms import visible

    table = source.table
    in_state = {f.name for f in state.schema.fields if not f.name.startswith("_cdc_")}
    in_source = {c.name for c in visible(table.columns)}
    if in_state != in_source:
        raise VerifyError(
            f"the columns differ: only in the source {sorted(in_source - in_state)}, only in the state "
            f"{sorted(in_state - in_source)}; a re-snapshot cannot change that: rebuild the state"
        )
    rows = range_stats(state, table.columns, table.key, source.ranges).collect()
    return {int(r["_cdc_r"]): RangeStats(int(r["_cdc_rows"]), int(r["_cdc_hash"])) for r in rows}


def current_state(state_dir: Path, collection: str) -> StateVersion | None:
    """The collection's current version; VerifyError for a state verify cannot read (the earlier folder
    format: the message names the command that converts it)."""
    from cdc_backfill.state.table import StateError, current_version
    from cdc_backfill.verify import VerifyError

    try:
        return current_version(state_dir, collection)
    except StateError as exc:
        raise VerifyError(str(exc)) from None


def no_state_reason(state_dir: Path, collection: str) -> str:
    """Why ``collection`` has no state to verify: a name the state does not hold (a typo, with the
    closest names), or a state not written yet."""
    import difflib

    from cdc_backfill.landing.layout import collection_dir
    from cdc_backfill.state.table import state_collections

    held = state_collections(state_dir)
    if not held:
        return f"no state at {collection_dir(state_dir, collection)} (run `cdc-backfill reconcile` first)"
    close = difflib.get_close_matches(collection, held, n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}?" if close else f"it holds {', '.join(held[:10])}"
    return f"the state {state_dir} has no collection {collection}: {hint}"


def verify_collection(
    sa_engine: sa.Engine, state_dir: Path, collection: str, ranges: int, master: str = "local[*]"
) -> tuple[SourceSide, Report]:
    """Read the source's ranges, then compare the collection's current state with them (Spark only once
    the source was read). Raises VerifyError when there is no state or its columns differ."""
    from cdc_backfill.verify import VerifyError
    from cdc_backfill.verify.source_side import read_source

    current = current_state(state_dir, collection)
    if current is None:
        raise VerifyError(no_state_reason(state_dir, collection))
    source = read_source(sa_engine, collection, ranges)
    return source, compare_state(current, source, master)
