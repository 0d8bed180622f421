"""The C fast path and the Python path encode every tuple to the same bytes, and both to the values
the converters give (parsed back as JSON)."""

from __future__ import annotations

import struct

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdc_backfill.pg import fastpath
from cdc_backfill.pg.values import converter_for

COLUMNS = [  # (name, type oid, strategy of server text)
    ("id", 20, st.integers(-(2**63), 2**63 - 1).map(str)),
    ("name", 25, st.text(max_size=40).filter(lambda s: "\x00" not in s)),
    (
        "price",
        1700,
        st.decimals(allow_nan=False, allow_infinity=False, places=3).map(lambda d: format(d, "f")),
    ),
    ("ok", 16, st.sampled_from(["t", "f"])),
    ("x", 701, st.sampled_from(["1.5", "-0", "1e+20", "NaN", "Infinity", "-Infinity", "3.141592653589793"])),
    ("at", 1184, st.sampled_from(["2024-01-02 03:04:05+00", "2024-01-02 03:04:05.123456+00", "infinity"])),
    ("day", 1082, st.dates().map(lambda d: d.isoformat())),
    ("blob", 17, st.binary(max_size=20).map(lambda b: "\\x" + b.hex())),
    ("tags", 1009, st.sampled_from(["{}", '{a,"b c",NULL}', '{"x\\"y"}'])),
]
NAMES = tuple(orjson.dumps(n) + b":" for n, _, _ in COLUMNS)
KINDS = [fastpath.column_kind(oid) for _, oid, _ in COLUMNS]


def tuple_bytes(values: list[str | object | None]) -> bytes:
    out = [struct.pack(">h", len(values))]
    for v in values:
        if v is None:
            out.append(b"n")
        elif v == "UNCHANGED":
            out.append(b"u")
        else:
            data = str(v).encode()
            out.append(b"t" + struct.pack(">i", len(data)) + data)
    return b"".join(out)


row_values = st.tuples(*[st.one_of(st.none(), strat) for _, _, strat in COLUMNS])


def test_the_c_path_is_built() -> None:
    if not fastpath.ACCELERATED:
        from tests.conftest import unavailable

        unavailable(
            "the C decoder of pgoutput tuples", "not built: make venv builds it where a C compiler is"
        )


@pytest.mark.skipif(not fastpath.ACCELERATED, reason="the C extension is not built here: see the test above")
@settings(max_examples=300, deadline=None)
@given(row_values, st.booleans())
def test_c_and_python_paths_agree(values: tuple[object, ...], toast: bool) -> None:
    vals = list(values)
    if toast:
        vals[1] = "UNCHANGED"
    buf = b"xxI" + tuple_bytes(vals)
    kinds = bytes(k for k, _ in KINDS)
    encoders = tuple(e for _, e in KINDS)
    c = fastpath.encode_tuple(buf, 3, kinds, encoders, NAMES, (0, 3))
    py = fastpath.encode_tuple_py(buf, 3, kinds, encoders, NAMES, (0, 3))
    assert c == py
    row = orjson.loads(c[0])
    for (name, oid, _), v in zip(COLUMNS, vals, strict=True):
        conv = converter_for(oid)
        if v is None:
            assert row[name] is None
        elif v == "UNCHANGED":
            assert row[name] == "__debezium_unavailable_value"
        elif oid == 20:
            assert row[name] == int(v)  # type: ignore[arg-type]
        elif oid in (25, 1700):
            assert row[name] == v
        elif oid == 701:
            assert row[name] == (float(v) if v[-1].isdigit() else v)  # type: ignore[index,arg-type]
        else:
            assert row[name] == conv(v)  # type: ignore[misc]
    assert orjson.loads(c[1]) == {"id": row["id"], "ok": row["ok"]}
    assert c[2] == len(buf)


def test_truncated_tuples_are_errors_not_crashes() -> None:
    buf = tuple_bytes(["1", "abc"])
    kinds = bytes([fastpath.KIND_RAW, fastpath.KIND_TEXT])
    enc = (bytes, bytes)
    for cut in range(1, len(buf)):
        with pytest.raises((ValueError, struct.error, IndexError)):
            fastpath.encode_tuple(buf[:cut], 0, kinds, enc, NAMES[:2], (0,))


def test_the_c_fast_path_is_built_in_ci() -> None:
    from tests.conftest import in_ci

    if in_ci():
        assert fastpath.ACCELERATED, "the C extension was not built: check that gcc and Python headers exist"
