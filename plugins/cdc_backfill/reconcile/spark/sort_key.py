"""The merge's sort key (position, priority, file, line) as every row of the merge carries it: four flat
columns, built into one struct only where a comparison needs the whole key (an aggregate's ordering, a
value kept with the position it came from).

Carried as a struct column, it was built for every row before the aggregation's sort and then sorted
and spilled with the row, which made the merge's aggregation slower (docs/benchmarks.md, "Measured
choices").
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

POSITION, PRIORITY, FILE, LINE = (
    "_cdc_sort_position",
    "_cdc_sort_priority",
    "_cdc_sort_file",
    "_cdc_sort_line",
)


def sort_key() -> Column:
    """The whole sort key, compared field by field: position, priority, file, line."""
    return F.struct(
        F.col(POSITION).alias("position"), F.col(PRIORITY).alias("priority"),
        F.col(FILE).alias("file"), F.col(LINE).alias("line"),
    )  # fmt: skip


def sort_position() -> Column:
    return F.col(POSITION)


def sort_priority() -> Column:
    return F.col(PRIORITY)


def sort_columns(
    position: Column, priority: int, file: Column | None = None, line: Column | None = None
) -> list[Column]:
    """A row's sort key columns: ``file`` and ``line`` null where the row came from no log file (a READ
    row, a previous state's row, a fill)."""
    return [
        position.alias(POSITION),
        F.lit(priority).alias(PRIORITY),
        (F.lit(None).cast("string") if file is None else file).alias(FILE),
        (F.lit(None).cast("long") if line is None else line).alias(LINE),
    ]
