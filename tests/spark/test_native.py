"""The JVM fast path gives exactly the rows of the Python path: same files, lines, values, quarantine.

``key``/``before``/``after`` are compared as JSON values (the guarantee); every other column as is.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from cdc_backfill.events.model import UNAVAILABLE, dumps
from cdc_backfill.events.parse import DEFAULT_OPTIONS
from cdc_backfill.spark.landing import landing_events, line_rows
from cdc_backfill.spark.lines import read_landing_lines
from cdc_backfill.spark.native import native_landing_events, native_rows
from tests.support.paths import FIXTURES

pytestmark = pytest.mark.spark

CAPTURE_FIXTURE = FIXTURES.parent / "capture" / "cdc-capture-sample.jsonl"
JSON_COLUMNS = ("key", "before", "after")


def normalised(rows: Iterable[Any]) -> list[tuple[Any, ...]]:
    out = []
    for r in rows:
        d = r.asDict()
        for c in JSON_COLUMNS:
            if d[c] is not None:
                d[c] = json.loads(d[c])
        out.append(tuple(json.dumps(d[k], sort_keys=True, default=str) for k in sorted(d)))
    return sorted(out)


def assert_same(spark, folder: Path) -> list[Any]:  # type: ignore[no-untyped-def]
    """Both paths over ``folder``: same schema, same rows; returns the rows."""
    native = native_landing_events(spark, str(folder))
    python = landing_events(spark, str(folder))
    assert native.schema == python.schema
    got, want = native.collect(), python.collect()
    assert normalised(got) == normalised(want)
    return got


def native_share(spark, folder: Path) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """(lines read natively, all lines)."""
    flags = native_rows(read_landing_lines(spark, str(folder))).select("_cdc_native").collect()
    return sum(r[0] for r in flags), len(flags)


def _as_jsonl(src: Path, dst: Path) -> None:
    doc = json.loads(src.read_text())
    dst.write_bytes(b"".join(dumps(e) + b"\n" for e in doc["events"]))


# ---------------------------------------------------------------- a capture line, built like _emit


def capture_line(
    key: Any,
    before: Any,
    after: Any,
    op: str,
    *,
    commit: int = 100,
    lsn: int = 90,
    schema: str = "public",
    table: str = "t",
    snapshot: str = "false",
) -> bytes:
    src = {
        "version": "cdc_backfill-0.1.0",
        "connector": "postgresql",
        "name": "cdc_backfill",
        "ts_ms": 1700000000000,
        "snapshot": snapshot,
        "db": "app",
        "schema": schema,
        "table": table,
        "txId": 77,
        "commit_lsn": commit,
        "lsn": lsn,
    }
    value = {"before": before, "after": after, "source": src, "op": op, "ts_ms": 1700000000123}
    return dumps({"key": key, "value": value})


def message_line(transactional: bool = True) -> bytes:
    src = {
        "version": "cdc_backfill-0.1.0", "connector": "postgresql", "name": "cdc_backfill",
        "ts_ms": 1700000000000, "snapshot": "false", "db": "app", "schema": "", "table": "",
        "txId": 5 if transactional else None, "commit_lsn": 300, "lsn": 290,
    }  # fmt: skip
    value = {"source": src, "op": "m", "ts_ms": 1, "message": {"prefix": "app", "content": "aGVsbG8="}}
    return dumps({"key": {"prefix": "app"}, "value": value})


# ---------------------------------------------------------------- fixtures and shapes


def test_every_fixture_file_as_is_and_as_lines(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for src in sorted(FIXTURES.glob("*.json")):
        shutil.copy(src, tmp_path / src.name)  # pretty-printed documents: every line goes to Python
        _as_jsonl(src, tmp_path / (src.stem + ".jsonl"))
    rows = assert_same(spark, tmp_path)
    assert {r.format for r in rows} >= {
        "debezium-postgresql",
        "debezium-sqlserver",
        "debezium-oracle",
        "dataworks",
    }
    assert any(r.quarantine_reason for r in rows)


def test_capture_output_is_read_natively_and_equally(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    shutil.copy(CAPTURE_FIXTURE, tmp_path / CAPTURE_FIXTURE.name)
    rows = assert_same(spark, tmp_path)
    ops = {r.op for r in rows}
    assert ops == {"c", "u", "d", "t", "m"}
    assert any(r.unchanged for r in rows)  # TOAST
    assert not any(r.quarantine_reason for r in rows)
    # Four lines go to Python, as their JSON text differs from Jackson's: a float8 1e300 (orjson writes
    # 1e+300, Java 1.0E300) and three rows with an emoji (Jackson writes \uD83D\uDE00).
    assert native_share(spark, tmp_path) == (7, 11), "does native.py still know the capture's layout?"


def test_malformed_lines_are_quarantined_identically(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good = capture_line({"id": 1}, None, {"id": 1, "v": "a"}, "c")
    lines = [
        good,
        b'{"key":{"id":2},"value":{"before":null,"after":{"id":2',  # cut short
        b"",
        b"   ",
        b"not json at all",
        b"[1, 2]",
        b'{"key":{"id":3},"value":null}',  # tombstone: skipped, not quarantined
        capture_line({"id": 4}, None, None, "c"),  # create without a row
        capture_line(None, None, {"id": 5}, "c"),  # no key
        capture_line({"id": 6}, None, {"id": 6}, "x"),  # unknown op
        capture_line({"id": 7}, None, {"id": 7}, "c", schema=""),  # no collection
        capture_line({"id": 8}, None, {"id": 8}, "c", commit=-1),  # negative position
        capture_line({"id": 9}, None, '{"id": 9}', "c"),  # after is a string holding JSON
        capture_line({"id": 10}, None, 5, "c"),  # after is a number
        capture_line('{"id": 11}', None, {"id": 11}, "c"),  # key is a string
        good.replace(b'"commit_lsn":100', b'"commit_lsn":"100"'),  # valid, other JSON type: Python
        good.replace(b'"ts_ms":1700000000000', b'"ts_ms":1.5'),  # odd timestamp
        good.replace(b'{"key"', b'{"op":null,"key"'),  # a top-level op: Python reads it as a value
        good[:-1] + b',"offset":5}',  # a sink's Kafka offset
        good.replace(b'"schema":"public"', b'"schema":5'),
        good.replace(b'"schema":"public"', b'"schema": "public"'),  # not compact: Python, same result
        b'{"key":{"id":12},"value":{"before":null,"after":{"id":12},"source":{"connector":"postgresql"}}}',
    ]
    (tmp_path / "bad.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "crlf.jsonl").write_bytes(b"\r\n".join([good, b"{oops", good]) + b"\r\n")
    (tmp_path / "cr.json").write_bytes(b"\r".join([good, b"", b"{oops", good]))  # no final newline
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + good + b"\n" + good + b"\n")
    (tmp_path / "ignored.txt").write_bytes(good)
    rows = assert_same(spark, tmp_path)
    quarantined = sorted((Path(r.file).name, r.line) for r in rows if r.quarantine_reason)
    assert ("bad.jsonl", 2) in quarantined and ("crlf.jsonl", 2) in quarantined
    assert ("cr.json", 3) in quarantined and ("bom.jsonl", 1) in quarantined
    native, _total = native_share(spark, tmp_path)
    assert native == 1 + 2 + 2 + 1  # bad.jsonl line 1, crlf 1 and 3, cr 1 and 4, bom line 2


def test_shapes_read_natively(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lines = [
        capture_line({"id": 1}, None, {"id": 1, "doc": UNAVAILABLE, "v": 2}, "u"),
        capture_line({"id": 1}, None, {"doc": UNAVAILABLE}, "u"),
        capture_line(
            {"id": 1},
            None,
            {"doc": UNAVAILABLE, "b": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==", "v": 1},
            "u",
        ),
        capture_line({"id": 1}, None, {"v": 1, "doc": UNAVAILABLE}, "u"),
        capture_line({"id": 2}, {"id": 2}, None, "d"),
        capture_line(None, None, None, "t"),
        capture_line({"id": 3}, None, {"id": 3}, "r", snapshot="incremental"),
        capture_line({"a.b": 1}, None, {"a.b": 1}, "c", schema="my.schema", table="t"),
        capture_line({"id": 4}, None, {"id": 4}, "c", commit=2**63 - 1, lsn=2**63 - 2),
        message_line(True),
        message_line(False),
    ]
    (tmp_path / "shapes.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    rows = assert_same(spark, tmp_path)
    assert native_share(spark, tmp_path) == (len(lines), len(lines))
    assert [list(r.unchanged) for r in rows[:4]] == [["doc"], ["doc"], ["doc", "b"], ["doc"]]
    assert rows[7].collection == '"my.schema"."t"'


def test_python_rows_agree_with_the_worker_loop(tmp_path: Path) -> None:
    # line_rows (the Python lines here) and landing._parse_batches (the Python path) build the same rows
    import pyarrow as pa

    from cdc_backfill.events.parse import parse_lines
    from cdc_backfill.spark.landing import _parse_batches

    for src in sorted(FIXTURES.glob("*.json")):
        _as_jsonl(src, tmp_path / (src.stem + ".jsonl"))
    data = b"".join(f.read_bytes() for f in sorted(tmp_path.glob("*.jsonl"))) + b"{bad\n\n"
    batch = pa.RecordBatch.from_pydict({"path": ["f"], "content": [data]})
    table = pa.Table.from_batches(list(_parse_batches(iter([batch]), DEFAULT_OPTIONS)))
    loop = [tuple(v for k, v in r.items() if k not in ("file", "line")) for r in table.to_pylist()]
    per_line = [
        # JSON values come as bytes from dumps (text in Arrow); the position key is binary in both
        tuple(v.decode() if isinstance(v, bytes) and i != 6 else v for i, v in enumerate(row))
        for _n, item in parse_lines(data.splitlines())
        for row in line_rows(item)
    ]
    assert per_line == loop and len(loop) > 10


# ---------------------------------------------------------------- odd values


def _scalar() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**64 - 1),  # beyond: see test_integers_beyond_64_bits
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
        st.sampled_from(
            [UNAVAILABLE, "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ==", '"', "\\", "é", "\u2028", "😀"]
        ),
        st.decimals(allow_nan=False, allow_infinity=False, places=4).map(str),
    )


_value = st.recursive(
    _scalar(),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
_row = st.dictionaries(
    st.one_of(st.text(max_size=8), st.sampled_from(["id", "after", "key", "op", "schema", '"q"', "a,b"])),
    _value,
    max_size=6,
)


# Few examples of many rows each: every example costs two Spark jobs.
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_row, st.sampled_from(["c", "u", "d", "r"])), min_size=1, max_size=40))
def test_odd_values_give_equal_rows(spark, tmp_path_factory, rows) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("odd")
    lines = [
        capture_line({"id": i}, {"id": i} if op != "c" else None, None if op == "d" else row, op, lsn=i)
        for i, (row, op) in enumerate(rows)
    ]
    (folder / "odd.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    assert_same(spark, folder)


ODD_AFTERS = [
    {"id": 1, "t": 'quote " backslash \\ newline \n tab \t nul \u0000'},
    {"id": 1, "t": "é ü 中文 😀 \u2028"},
    {"id": 1, "n": 2**64 - 1, "m": -(2**63), "f": 1e300, "g": 1e-7, "h": -0.0, "i": 0.1, "k": 2.5},
    {"id": 1, "n": "12345678901234567890.123456789", "z": None, "e": {}, "a": []},
    {"id": 1, "doc": UNAVAILABLE, "d2": [UNAVAILABLE], "x": "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="},
    {"id": 1, "nested": {"doc": UNAVAILABLE}, "doc": UNAVAILABLE},
    {"id": 1, "j": '{"after": "x", "key": 1}'},
    {UNAVAILABLE: UNAVAILABLE, "id": 1},
    {"id": 1, "a,b": UNAVAILABLE, '"q"': "x", "c": UNAVAILABLE},
]


def test_odd_values(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lines = [capture_line({"id": 1}, {"id": 1}, after, "u", lsn=i) for i, after in enumerate(ODD_AFTERS)]
    (tmp_path / "v.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    assert_same(spark, tmp_path)


def test_escaped_lone_surrogate_goes_to_python(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good = capture_line({"id": 1}, None, {"id": 1, "v": "a"}, "c")
    lines = [good.replace(b'"v":"a"', b'"v":"\\uD800"'), good.replace(b'"v":"a"', b'"v":"\\ud800x"')]
    (tmp_path / "s.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    rows = assert_same(spark, tmp_path)
    assert all(r.quarantine_reason for r in rows)


def test_integers_beyond_64_bits(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The one known difference: orjson reads an integer beyond 64 bits as a float (the Python path
    then writes 1.2345678901234568e+29), Jackson keeps its digits. The capture never writes one (int8
    fits, numeric is a string); a cheap native test for it costs as much as the parse (a regex)."""
    n = 123456789012345678901234567890
    (tmp_path / "big.jsonl").write_bytes(capture_line({"id": 1}, None, {"id": 1, "n": n}, "c") + b"\n")
    [native] = native_landing_events(spark, str(tmp_path)).collect()
    [python] = landing_events(spark, str(tmp_path)).collect()
    assert json.loads(native.after)["n"] == n
    assert json.loads(python.after)["n"] == float(n)
    # positions up to 2**64 - 1 (orjson's limit) agree: beyond 2**63 - 1 the fast path leaves them to Python
    (tmp_path / "big.jsonl").write_bytes(
        b"\n".join(
            capture_line({"id": 1}, None, {"id": 1}, "c", commit=c, lsn=c) for c in (2**63, 2**64 - 1, 2**64)
        )
        + b"\n"
    )
    assert_same(spark, tmp_path)


def test_duplicate_names_follow_python(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    good = capture_line({"id": 1}, None, {"id": 1, "doc": UNAVAILABLE}, "u")
    dup = good.replace(b'"doc":"__debezium', b'"doc":1,"doc":"__debezium')
    dup2 = good.replace(
        b'"doc":"__debezium_unavailable_value"', b'"doc":"__debezium_unavailable_value","doc":2'
    )
    (tmp_path / "dup.jsonl").write_bytes(b"\n".join([dup, dup2]) + b"\n")
    assert_same(spark, tmp_path)


def test_file_names_and_split_files(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    line = capture_line({"id": 1}, None, {"id": 1, "pad": "x" * 200}, "c")
    weird = tmp_path / "sub dir" / "a+b %41 é.jsonl"
    weird.parent.mkdir()
    weird.write_bytes(b"\n".join([line] * 50) + b"\n")
    # a file big enough that Spark splits it across partitions (max partition bytes set low below)
    (tmp_path / "big.jsonl").write_bytes(b"\n".join([line, b"", b"{bad"] * 4000) + b"\n")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "200k")
    try:
        rows = assert_same(spark, tmp_path)
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert {Path(r.file).name for r in rows} == {"a+b %41 é.jsonl", "big.jsonl"}
    assert max(r.line for r in rows) == 3 * 4000 - 0  # the last "{bad" of big.jsonl


def test_compressed_files_stay_on_the_python_path(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import gzip

    line = capture_line({"id": 1}, None, {"id": 1}, "c")
    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(line + b"\n"))
    (tmp_path / "b.jsonl").write_bytes(line + b"\n")
    assert_same(spark, tmp_path)


def test_a_list_of_files_reads_as_its_folder(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """What a reconcile run gives (``spark.runs.read_new_events``): the new stream files, not a folder."""
    import gzip

    line = capture_line({"id": 1}, None, {"id": 1}, "c")
    (tmp_path / "a b+c.jsonl").write_bytes(line + b"\n{bad\n")
    (tmp_path / "d.jsonl.gz").write_bytes(gzip.compress(line + b"\n"))
    (tmp_path / "e.jsonl").write_bytes(b"\n".join([line] * 3) + b"\n")
    files = [str(tmp_path / n) for n in ("a b+c.jsonl", "d.jsonl.gz")]
    got = native_landing_events(spark, files)
    want = landing_events(spark, str(tmp_path)).where(~F.col("file").endswith("e.jsonl"))
    assert got.schema == want.schema
    assert normalised(got.collect()) == normalised(want.collect())
    assert {Path(r.file).name for r in got.collect()} == {"a b+c.jsonl", "d.jsonl.gz"}


# ---------------------------------------------------------------- a live capture


def capture_sample(url: str, landing: Path, run: Callable[[str, Path], Any]) -> None:
    """Changes of every kind the capture writes, captured into ``landing`` (how the shipped sample
    ``tests/fixtures/capture/cdc-capture-sample.jsonl`` was made)."""
    from cdc_backfill.capture.postgres import PostgresCapture

    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            sa.text(
                "CREATE TABLE t (id int PRIMARY KEY, n numeric(20,5), big numeric, f float8, r real,"
                " ts timestamp, tz timestamptz, d date, b bytea, arr int[], tags text[], j jsonb,"
                " ok bool, txt text, doc text)"
            )
        )
        conn.execute(sa.text('CREATE TABLE "odd.schema" (k text PRIMARY KEY, v text)'))
    PostgresCapture(url, landing).run()
    big = "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, 300) i)"
    with engine.connect() as conn:
        for stmt in (
            "INSERT INTO t VALUES (1, 12345.67891, 123456789012345678901234567890.5, 0.1, 1.5,"
            " '2024-01-02 03:04:05.123456', '2024-01-02 03:04:05+02', '2024-01-02', '\\x0102ff',"
            ' \'{1,2,NULL}\', \'{"a b",c}\', \'{"k": [1, 2.5], "s": "q\\"x"}\', true,'
            f" E'quote \" backslash \\\\ tab \\t newline \\n é 中文 😀', {big})",
            "INSERT INTO t (id, f, txt) VALUES (2, 1e300, NULL), (3, -0.0, '')",
            "UPDATE t SET ok = false WHERE id = 1",  # doc unchanged and TOASTed: the placeholder
            "UPDATE t SET id = 4 WHERE id = 1",  # a key change: delete and create
            "SELECT pg_logical_emit_message(true, 'app', 'hello')",
            "SELECT pg_logical_emit_message(false, 'app', 'outside')",
            "INSERT INTO \"odd.schema\" VALUES ('a.b', 'x')",
            "DELETE FROM t WHERE id = 2",
            "TRUNCATE t",
        ):
            conn.execute(sa.text(stmt))
            conn.commit()  # a transaction each: positions with several commit LSNs
    engine.dispose()
    assert run(url, landing).returncode == 0


@pytest.mark.pg
def test_a_live_capture_is_read_natively_and_equally(spark, fresh_db: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tests.support.capture import run_capture

    landing = tmp_path / "landing"
    capture_sample(fresh_db, landing, run_capture)
    stream = landing / "stream"
    rows = assert_same(spark, stream)
    assert {r.op for r in rows} == {"c", "u", "d", "t", "m"}
    native, total = native_share(spark, stream)
    # lines whose JSON text Jackson writes differently (1e300, the emoji) go to Python, the rest is native
    assert total - native == 4, (native, total)
