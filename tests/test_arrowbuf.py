"""Arrow columns built from buffers equal what pa.array gives from the same values."""

from __future__ import annotations

import pyarrow as pa

from cdc_backfill.arrowbuf import (
    char_array,
    from_buffers,
    int64_array,
    joined,
    line_array,
    names_array,
    repeated_string,
    string_array,
)


def test_columns_equal_pa_array() -> None:
    assert char_array(b"cudrt").equals(pa.array(list("cudrt"), pa.string()))
    assert char_array(b"").equals(pa.array([], pa.string()))
    assert int64_array([1, 2, -3]).equals(pa.array([1, 2, -3], pa.int64()))
    with_nulls = [None, 5, None, None, None, None, None, None, 9, None]
    assert int64_array(with_nulls).equals(pa.array(with_nulls, pa.int64()))
    assert repeated_string("capture:slot", 3).equals(pa.array(["capture:slot"] * 3, pa.string()))
    assert repeated_string("", 2).equals(pa.array(["", ""], pa.string()))
    assert repeated_string("x", 0).equals(pa.array([], pa.string()))
    assert string_array(["a", "", "é"]).equals(pa.array(["a", "", "é"], pa.string()))
    assert line_array(3).equals(pa.array([1, 2, 3], pa.int64()))
    assert names_array([None, None]).equals(pa.array([None, None], pa.list_(pa.string())))
    some = [None, ["big", "notes"], [], None, None, None, None, None, ["é"]]
    assert names_array(some).equals(pa.array(some, pa.list_(pa.string())))


def test_from_buffers_takes_a_c_readers_buffers() -> None:
    data, offsets = joined([b"a", b"", b"\xc3\xa9"])
    assert from_buffers(pa.string(), 3, data, offsets).equals(pa.array(["a", "", "é"], pa.string()))
    values = pa.array([7, 0, 9], pa.int64()).buffers()[1].to_pybytes()
    got = from_buffers(pa.int64(), 3, values, validity=bytes([0b101]))
    assert got.equals(pa.array([7, None, 9], pa.int64()))
