"""The stream marked by the closed chunks' key ranges and windows (``reconcile.runs.stream_spans``): a
stream row is inside the window of its key's READ row when its key is in a chunk's range and its position
strictly inside that chunk's window. The spans are sorted and apart, so the one span that may hold a key
is found by a binary search over array literals of their least keys: one projection a halving step,
written as Spark SQL text (parsed in one call each; built from columns, the conditions were hundreds of
calls to the JVM while the driver planned).

Each step is small code. The search written as one nested condition was a method too large for the JVM
to compile once a run had 100 chunks; the steps are faster than the join they replaced
(docs/benchmarks.md, "Measured choices").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdc_backfill.names import spark_ident, spark_string
from cdc_backfill.reconcile.runs import ReadSpan

# per row during the search: how many spans have a least key at most the row's key (the last of them
# is the one span that may hold it; 0: none)
AT = "_cdc_span"


def marked_by_spans(
    df: DataFrame, key: str, position: str, spans: Sequence[ReadSpan], name: str
) -> DataFrame:
    """``df`` with the column ``name``: true where the column ``key`` is in a span's key range and the
    column ``position`` strictly inside its window (``spans`` sorted and apart), false elsewhere."""
    if not spans:
        return df.withColumn(name, F.lit(False))
    leasts = array_sql(key_sql(s.least) for s in spans)
    steps = search_steps(len(spans))
    # Every step in one select, each naming the one before (lateral column aliases): Spark plans it as a
    # projection a step all the same, and the driver analyses two frames, not one a step (10-15 ms each)
    found = [F.expr(f"0 AS {count_after(0)}")]
    for i, step in enumerate(steps, 1):
        found.append(F.expr(f"{search_step_sql(key, leasts, step, count_after(i - 1))} AS {count_after(i)}"))
    last = count_after(len(steps))
    marked = F.expr(f"{inside_found_sql(key, position, spans, last)} AS {spark_ident(name)}")
    return df.select("*", *found, marked).drop(*[count_after(i) for i in range(len(steps) + 1)])


def count_after(step: int) -> str:
    """The column holding the search's count after ``step`` steps."""
    return f"{AT}{step}"


def search_steps(n: int) -> list[int]:
    """The halving steps of a search over ``n`` spans: powers of two from the greatest at most ``n``."""
    steps = []
    step = 1
    while step <= n:
        steps.insert(0, step)
        step *= 2
    return steps


def search_step_sql(key: str, leasts: str, step: int, count: str) -> str:
    """One step: ``step`` more spans counted when the key is at least the least key of the span that
    many on (``leasts``: the array of the spans' least keys; ``get`` gives null past the end, so the
    count stays); ``count`` names the column holding the count so far."""
    return f"{count} + CASE WHEN {spark_ident(key)} >= get({leasts}, {count} + {step - 1}) THEN {step} ELSE 0 END"


def inside_found_sql(key: str, position: str, spans: Sequence[ReadSpan], count: str) -> str:
    """After the search (``count``: the column holding its count): the key at most the found span's
    greatest, the position inside its window."""
    k, p, i = spark_ident(key), spark_ident(position), f"{count} - 1"

    def at(values: Iterable[str]) -> str:
        return f"get({array_sql(values)}, {i})"

    greatest = at(key_sql(s.greatest) for s in spans)
    low, high = (at(binary_sql(getattr(s, w)) for s in spans) for w in ("low", "high"))
    return f"{count} > 0 AND {k} <= {greatest} AND {p} > {low} AND {p} < {high}"


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


def array_sql(values: Iterable[str]) -> str:
    return "array(" + ", ".join(values) + ")"


def binary_sql(value: bytes) -> str:
    return f"X'{bytes(value).hex()}'"


def key_sql(value: int | str) -> str:
    """A key's value from a chunk file's statistics as a Spark SQL literal: an integer, or text."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"a chunk's key range of {type(value).__name__} cannot mark the stream")
    if isinstance(value, int):
        return str(value)
    return spark_string(value)
