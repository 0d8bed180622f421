"""Ingest's C reader of the common PostgreSQL record (``ingest.plain``) gives the rows the Python parser
gives for the same file, key changes paired alike; any file with a line it is not sure of is left whole
to the Python parser."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pyarrow as pa
import pytest

from cdc_backfill.events.model import UNAVAILABLE
from cdc_backfill.events.parse import DEFAULT_OPTIONS, ParseOptions
from cdc_backfill.ingest import plain
from cdc_backfill.ingest.spark.parse import ARROW_SCHEMA, parse_batches
from tests.support.records import capture_record, changed, sink_record


def _records() -> list[Any]:
    """Records of every kind the C reader takes (bytes: a line as it is)."""
    base = capture_record("u", 1, 100, 120)
    return [
        capture_record("c", 1, 10, 20),
        base,
        # a key change (delete and create at one WAL record), an update between another pair's halves
        capture_record("d", 1, 200, 220),
        capture_record("c", 2, 200, 220),
        capture_record("d", 3, 300, 320),
        capture_record("u", 9, 305, 320),
        capture_record("c", 4, 300, 320),
        capture_record("d", 5, 330, 340, txid=None),
        capture_record("c", 6, 330, 340, txid=None),
        capture_record("d", 5, 350, 360, txid=8),
        capture_record("c", 6, 350, 360, txid=9),  # another transaction: no key change
        capture_record("r", 5, 400, 420, snapshot="INCREMENTAL"),
        capture_record("r", 7, 400, 420, snapshot=True),
        capture_record("r", 8, 400, 420, snapshot=None),
        changed(
            capture_record("u", 10, 500, 520), ("value", "source", "schema"), "a.b"
        ),  # quoted collection name
        changed(capture_record("u", 11, 500, 520), ("value", "source", "table"), "other"),
        changed(
            base,
            ("value", "after"),
            {
                "id": 1,
                "name": 'é "q" \\ / \u2028 \U0001f600',
                "n": None,
                "f": -1.25e-7,
                "deep": {"a": [1, {"b": []}]},
            },
        ),
        orjson.dumps(base).replace(b'"score":0.5', b'"score":1180591620717411303424'),  # beyond 64 bits
        changed(base, ("value", "after"), {"id": 1, "name": UNAVAILABLE + "x"}),  # not the placeholder
        # TOASTed columns the change left as they were, in every form of the placeholder
        changed(base, ("value", "after", "name"), UNAVAILABLE),
        changed(base, ("value", "after", "balance"), "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="),
        changed(
            changed(base, ("value", "after", "name"), [UNAVAILABLE]), ("value", "after", "score"), UNAVAILABLE
        ),
        orjson.dumps(changed(base, ("value", "after", "active"), UNAVAILABLE)).replace(
            b"__deb", b"\\u005f_deb"
        ),
        changed(base, ("value", "after"), {"id": UNAVAILABLE}),  # every column (the key's too)
        changed(base, ("value", "after", "name"), [UNAVAILABLE, 1]),  # not the placeholder
        changed(base, ("value", "source", "extra"), {"sequence": '["1","2"]'}),
        # a sink's records: offsets, no commit LSN; a key change with a tombstone between its halves
        sink_record("c", 6, 1, 500),
        sink_record("d", 6, 2, 600),
        {"topic": "cdc.public.t", "partition": 0, "offset": 3, "key": {"id": 6}, "value": None},
        sink_record("c", 7, 4, 600),
        sink_record("r", 8, 5, None),
        sink_record("d", 8, 6, None),
        sink_record("c", 9, 7, None),
        changed(sink_record("u", 9, 8, 700), ("partition",), KeyError),
        {"value": None},
    ]


def _file(records: list[Any], sep: bytes = b"\n") -> bytes:
    lines = [r if isinstance(r, bytes) else orjson.dumps(r) for r in records]
    lines[1] = b"  \t" + lines[1] + b" "  # space around a record
    lines.insert(3, b"")
    lines.insert(5, b" \t\x0b")
    return sep.join(lines) + sep


def _rows(
    data: bytes, monkeypatch: pytest.MonkeyPatch | None = None, options: ParseOptions = DEFAULT_OPTIONS
) -> pa.Table:
    files = pa.RecordBatch.from_pydict({"path": ["f.jsonl"], "content": pa.array([data], pa.binary())})
    if monkeypatch is not None:  # the Python parser only
        with monkeypatch.context() as m:
            m.setattr("cdc_backfill.ingest.spark.parse.parse_file", lambda *a: None)
            return pa.Table.from_batches(list(parse_batches(iter([files]), options)), schema=ARROW_SCHEMA)
    return pa.Table.from_batches(list(parse_batches(iter([files]), options)), schema=ARROW_SCHEMA)


def _comparable(table: pa.Table) -> dict[str, list[Any]]:
    """The rows, JSON texts as their values: the C reader keeps a line's own text of a value."""
    out = table.to_pydict()
    for name in ("key", "before", "after"):
        out[name] = [None if v is None else json.loads(v) for v in out[name]]
    return out


@pytest.mark.parametrize("sep", [b"\n", b"\r\n", b"\r"])
def test_the_c_reader_gives_the_python_parsers_rows(monkeypatch: pytest.MonkeyPatch, sep: bytes) -> None:
    data = _file(_records(), sep)
    assert plain.parse_file(data, set()) is not None  # every line above is the C reader's
    got, expected = _rows(data), _rows(data, monkeypatch)
    assert got.num_rows == expected.num_rows == len(_records()) - 2  # less the two tombstones
    assert _comparable(got) == _comparable(expected)
    assert {tuple(u) for u in got.column("unchanged").to_pylist()} == {
        (),
        ("name",),
        ("balance",),
        ("name", "score"),
        ("active",),
        ("id",),
    }
    positions = got.column("position").to_pylist()
    # the key change's create: its delete's position, then element 1 where the delete has 0
    assert positions[2].endswith(b"\x00") and positions[3] == positions[2][:-1] + b"\x01\x01"


def test_the_c_reader_keeps_a_lines_own_json_text() -> None:
    line = b'{"key":{"id":1},"value":{"before":null,"after":{"id":1,"s":"\\u00e9\\/","f":1.50},' \
           b'"source":{"connector":"postgresql","ts_ms":5,"schema":"s","table":"t","commit_lsn":9,"lsn":8},' \
           b'"op":"c"}}'  # fmt: skip
    got = plain.parse_file(line, set())
    assert got is not None
    assert got.columns["after"].to_pylist() == ['{"id":1,"s":"\\u00e9\\/","f":1.50}']
    assert got.columns["position"].to_pylist() == [b"\x01\x09\x01\x08"]
    assert got.columns["collection"].to_pylist() == ["s.t"]


def test_shapes_are_given_once_per_worker() -> None:
    seen: set[tuple[Any, ...]] = set()
    data = _file(_records())
    first = plain.parse_file(data, seen)
    again = plain.parse_file(data, seen)
    assert first is not None and again is not None
    assert len(first.shapes) >= 3 and again.shapes == {}
    shape = orjson.loads(first.shapes[0])
    assert shape == {"key": ["id"], "columns": ["id", "name", "balance", "active", "score"]}


BASE = capture_record("u", 1, 100, 120)
LEFT_TO_PYTHON = {
    "schema line": {"schemas": {"v1": {"type": "struct", "fields": []}}},
    "follows line": {"follows": capture_record("d", 1, 1, 2)},
    "wrapped key": changed(BASE, ("key",), {"schema": {"type": "struct"}, "payload": {"id": 1}}),
    "null key": changed(BASE, ("key",), None),
    "key of a list": changed(BASE, ("key",), [1]),
    "op outside": changed(BASE, ("op",), "c"),
    "payload": changed(BASE, ("payload",), None),
    "value_schema": changed(BASE, ("value_schema",), "v1"),
    "text commit_lsn": changed(BASE, ("value", "source", "commit_lsn"), "0/78"),
    "null lsn": changed(BASE, ("value", "source", "lsn"), None),
    "negative lsn": changed(BASE, ("value", "source", "lsn"), -1),
    "other connector": changed(BASE, ("value", "source", "connector"), "PostgreSQL"),
    "empty table": changed(BASE, ("value", "source", "table"), ""),
    "text ts_ms": changed(BASE, ("value", "source", "ts_ms"), "1700"),
    "text txId": changed(BASE, ("value", "source", "txId"), "7"),
    "number snapshot": changed(BASE, ("value", "source", "snapshot"), 1),
    "no after": changed(BASE, ("value", "after"), None),
    "after of a list": changed(BASE, ("value", "after"), [1]),
    "truncate": changed(BASE, ("value", "op"), "t"),
    "source text": changed(BASE, ("value", "source"), "x"),
    "value alone": BASE["value"],
    "value of a list": changed(BASE, ("value",), [1]),
    "sink without offset": changed(sink_record("u", 9, 6, 700), ("offset",), KeyError),
    "text offset": changed(sink_record("u", 9, 6, 700), ("offset",), "8"),
    "null partition": changed(sink_record("u", 9, 6, 700), ("partition",), None),
    "dataworks": {"schema": {"dataColumn": [], "primaryKey": []}, "payload": {"sequenceId": "1"}},
}
RAW_LEFT_TO_PYTHON = {
    "not json": b"not json",
    "a list": b"[1, 2]",
    "trailing text": orjson.dumps(BASE) + b" x",
    "invalid UTF-8": orjson.dumps(BASE).replace(b"n1", b"n\xff"),
    "lone surrogate": orjson.dumps(BASE).replace(b'"n1"', b'"\\ud800"'),
    "infinite float": orjson.dumps(BASE).replace(b"0.5", b"1e400"),
    "duplicate column": orjson.dumps(BASE).replace(b'"name"', b'"id"'),
    "duplicate key name": orjson.dumps(BASE).replace(b'{"id":1}', b'{"id":1,"id":2}', 1),
    "duplicate op": orjson.dumps(BASE).replace(b'"op":"u"', b'"op":"u","op":"c"'),
    "duplicate column beside a placeholder": orjson.dumps(
        changed(BASE, ("value", "after", "name"), UNAVAILABLE)
    ).replace(b'"balance"', b'"name"'),
    "escaped name": orjson.dumps(BASE).replace(b'"commit_lsn"', b'"commit\\u005flsn"'),
    "deep": orjson.dumps(changed(BASE, ("value", "after", "name"), 0)).replace(
        b'"name":0', b'"name":' + b"[" * 100 + b"]" * 100
    ),
    "control character": orjson.dumps(BASE).replace(b"n1", b"n\x01"),
}


@pytest.mark.parametrize("name", sorted(set(LEFT_TO_PYTHON) | set(RAW_LEFT_TO_PYTHON)))
def test_a_line_the_c_reader_is_not_sure_of_leaves_the_file_to_python(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = RAW_LEFT_TO_PYTHON.get(name) or orjson.dumps(LEFT_TO_PYTHON[name])
    good = _file(_records())
    for data in (line + b"\n" + good, good + line + b"\n"):
        assert plain.parse_file(data, set()) is None
        assert _comparable(_rows(data)) == _comparable(_rows(data, monkeypatch))


def test_dataworks_files_never_reach_the_c_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    called = []
    monkeypatch.setattr("cdc_backfill.ingest.spark.parse.parse_file", lambda *a: called.append(1))
    _rows(_file(_records()), options=ParseOptions(format="dataworks"))
    assert called == []
