"""Positions on Spark: ``events.positions.position_key`` bytes (one binary value that Spark, Parquet
statistics and DuckDB compare byte by byte in position order), built from JVM columns where the fast
path has them and read back on the driver."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_backfill.events.positions import position_key, position_of_key

POSITION_TYPE = T.BinaryType()


def key_literal(position: Sequence[int]) -> Column:
    """A position as a binary literal, to compare with position columns."""
    return F.lit(bytearray(position_key(tuple(position))))


def key_of_longs(*elements: Column) -> Column:
    """``position_key`` of non-negative ``bigint`` columns, without leaving generated code: each element
    is its byte count then its big-endian bytes without leading zeros (none at all for 0)."""
    parts = []
    for value in elements:
        text = F.hex(value)  # upper-case, no leading zeros; "0" for 0
        digits = (
            F.when(value == 0, F.lit(""))
            .when(F.length(text) % 2 == 1, F.concat(F.lit("0"), text))
            .otherwise(text)
        )
        size = F.lpad(F.hex(F.shiftright(F.length(digits), 1)), 2, "0")
        parts += [F.unhex(size), F.unhex(digits)]
    return F.concat(*parts)


def position_of(value: bytes | bytearray | None) -> tuple[int, ...] | None:
    """A position key as Spark returns it to the driver, back to its integers."""
    return None if value is None else position_of_key(bytes(value))
