"""A batch's destinations, keys and values come out of the JVM joined by NUL, which JSON text never
holds; null parts are None, and a part holding the separator is refused, never landed misaligned."""

from __future__ import annotations

import pytest

from cdc_backfill.capture.debezium.jvm_batch import SEPARATOR, split_joined


def test_parts_in_order_and_null_as_none() -> None:
    joined = SEPARATOR.join(['{"id":1}', "null", '{"a":"x\\u0000y"}'])
    assert split_joined(joined, 3, "values") == ['{"id":1}', None, '{"a":"x\\u0000y"}']


def test_an_empty_batch() -> None:
    assert split_joined("", 0, "keys") == []


def test_a_part_holding_the_separator_is_refused() -> None:
    with pytest.raises(ValueError, match="a batch of 2 records gave 3 values: a value holds a NUL"):
        split_joined(SEPARATOR.join(["a", "b\0c"]), 2, "values")


def test_the_line_the_jvm_builds_is_the_landings_line() -> None:
    """``BatchReader.lines`` fills LINE_RECIPE in the JVM; ``batch_lines`` writes the same line in Python
    (batches looked into record by record): one layout for ingest to read."""
    from cdc_backfill.capture.debezium.batch_files import batch_lines
    from cdc_backfill.capture.debezium.jvm_batch import LINE_RECIPE

    for key, value in (('{"id":1}', '{"payload":{"id":1}}'), ('{"id":2}', None)):
        head, at_key, at_value, tail = LINE_RECIPE.split("\1")
        jvm = f"{head}7{at_key}{key}{at_value}{'null' if value is None else value}{tail}"
        assert jvm == batch_lines([(key, value)], 7)[0]
