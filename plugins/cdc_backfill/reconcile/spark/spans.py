"""The stream marked by the closed chunks' key ranges and windows (``reconcile.runs.stream_spans``): a
stream row is inside the window of its key's READ row when its key is in a chunk's range and its position
strictly inside that chunk's window. Written as Spark SQL text and parsed in one call: built from columns,
the conditions of a 1M-event run's 10 chunks were some 600 calls to the JVM while the driver planned."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F

from cdc_backfill.names import spark_ident
from cdc_backfill.reconcile.runs import ReadSpan


def inside_spans(key: str, position: str, spans: Sequence[ReadSpan]) -> Column:
    """True where the column ``key`` is in a span's key range and the column ``position`` strictly inside
    its window (``spans`` sorted and apart)."""
    return F.expr(inside_spans_sql(key, position, spans))


def inside_spans_sql(key: str, position: str, spans: Sequence[ReadSpan]) -> str:
    """:func:`inside_spans` as Spark SQL: a binary search written as nested conditions, a few comparisons
    a row. Keys are integers or text (``reconcile.runs.stream_spans``); text is written as its UTF-8
    bytes, so no character needs escaping."""
    k, p = spark_ident(key), spark_ident(position)
    if not spans:
        return "false"
    if len(spans) == 1:
        s = spans[0]
        return (
            f"({k} >= {key_sql(s.least)} AND {k} <= {key_sql(s.greatest)}"
            f" AND {p} > {binary_sql(s.low)} AND {p} < {binary_sql(s.high)})"
        )
    mid = len(spans) // 2
    return (
        f"CASE WHEN {k} < {key_sql(spans[mid].least)} THEN {inside_spans_sql(key, position, spans[:mid])}"
        f" ELSE {inside_spans_sql(key, position, spans[mid:])} END"
    )


def window_high(chunk: str, spans: Sequence[ReadSpan]) -> Column:
    """The high watermark of the window of the chunk the column ``chunk`` names, null for a chunk not in
    ``spans`` (its window open or not found: its READ rows wait). An expression where the READ rows are
    read: a join with the windows' local relation is a broadcast of its own the driver plans and runs
    before the merge starts."""
    return F.expr(window_high_sql(chunk, spans))


def window_high_sql(chunk: str, spans: Sequence[ReadSpan]) -> str:
    if not spans:
        return "CAST(NULL AS BINARY)"
    cases = " ".join(f"WHEN {key_sql(s.chunk)} THEN {binary_sql(s.high)}" for s in spans)
    return f"CASE {spark_ident(chunk)} {cases} END"


def binary_sql(value: bytes) -> str:
    return f"X'{bytes(value).hex()}'"


def key_sql(value: int | str) -> str:
    """A key's value from a chunk file's statistics as a Spark SQL literal: an integer, or text."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"a chunk's key range of {type(value).__name__} cannot mark the stream")
    if isinstance(value, int):
        return str(value)
    return f"CAST({binary_sql(value.encode())} AS STRING)"
