"""The short path for the common PostgreSQL record (``events.debezium.plain_postgres``) gives exactly the
events and quarantine entries the general path gives, line for line, the stream's state included."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cdc_backfill.events import debezium
from cdc_backfill.events.model import UNAVAILABLE
from cdc_backfill.events.parse import parse_lines
from cdc_backfill.events.positions import PgStream
from tests.support.records import capture_record, changed, sink_record


def _lines() -> list[bytes]:
    base = capture_record("u", 1, 100, 120)
    records: list[Any] = [
        capture_record("c", 1, 10, 20),
        base,
        # a key change: delete and create at one WAL record, and a delete that is none
        capture_record("d", 1, 200, 220),
        capture_record("c", 2, 200, 220),
        capture_record("d", 3, 300, 320),
        capture_record("c", 4, 310, 320),
        capture_record("r", 5, 400, 420, snapshot="incremental"),
        # a sink's records: offsets, no commit LSN, a key change among them, a tombstone between
        sink_record("c", 6, 1, 500),
        sink_record("d", 6, 2, 600),
        {"partition": 0, "offset": 3, "key": {"id": 6}, "value": None},
        sink_record("c", 7, 4, 600),
        sink_record("r", 8, 5, None),
        # records the short path leaves to the general one
        changed(base, ("value", "source", "commit_lsn"), "0/78"),
        changed(base, ("value", "source", "commit_lsn"), True),
        changed(base, ("value", "source", "lsn"), None),
        changed(base, ("value", "source", "lsn"), -1),
        changed(base, ("value", "source", "connector"), "PostgreSQL"),
        changed(
            base, ("value", "source", "schema"), "a.b"
        ),  # (taken: its name quoted as the general path does)
        changed(base, ("value", "source", "table"), ""),
        changed(base, ("value", "source", "table"), KeyError),
        changed(base, ("value", "source", "ts_ms"), "1700"),
        changed(base, ("value", "source", "ts_ms"), -5),
        changed(base, ("value", "source", "snapshot"), True),
        changed(base, ("value", "after", "name"), UNAVAILABLE),
        changed(base, ("value", "after", "name"), [UNAVAILABLE]),
        changed(base, ("value", "after"), None),
        changed(base, ("value", "after"), [1]),
        changed(base, ("value", "before"), "x"),
        changed(base, ("value", "op"), "t"),
        changed(base, ("value", "op"), "x"),
        changed(base, ("value", "source"), "x"),
        changed(base, ("key",), None),
        changed(base, ("key",), {"schema": {"type": "struct"}, "payload": {"id": 1}}),
        changed(base, ("key",), [1]),
        changed(base, ("op",), "c"),
        changed(base, ("payload",), None),
        changed(base, ("value_schema",), "v1"),
        changed(sink_record("u", 9, 6, 700), ("partition",), None),
        changed(sink_record("u", 9, 7, 700), ("partition",), "0"),
        changed(sink_record("u", 9, 8, 700), ("offset",), "8"),
        changed(sink_record("u", 9, 9, 700), ("offset",), -1),
        {"schemas": {"v1": {"type": "struct", "fields": []}}},
        capture_record("c", 10, 800, 820)["value"],  # the value alone
    ]
    return [orjson.dumps(r) for r in records] + [b"not json", b"", b"[1, 2]"]


def _parsed(lines: list[bytes]) -> list[tuple[int, Any]]:
    return list(parse_lines(lines, "f.jsonl", schemas={}))


def test_the_short_path_reads_what_the_general_one_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _lines()
    short = _parsed(lines)
    taken = sum(1 for r in (orjson.loads(x) for x in lines[:12]) if isinstance(r, dict) and r.get("value"))
    assert taken == 11  # the short path's records above are all of its kind
    monkeypatch.setattr("cdc_backfill.events.parse.plain_postgres", lambda *a: None)
    assert short == _parsed(lines)


def test_the_short_path_takes_the_common_records_and_pairs_key_changes() -> None:
    order = PgStream()
    got = [debezium.plain_postgres(orjson.loads(x), order) for x in _lines()[:12]]
    assert all(g is not None for i, g in enumerate(got) if i != 9)  # 9: the tombstone
    delete, create = got[2][0], got[3][0]  # type: ignore[index]
    assert delete.position == (220, 200, 0) and create.position == (220, 200, 1)
    assert got[5][0].position == (320, 310)  # type: ignore[index]  # a create after another key's delete
    assert got[10][0].position == (0, 2, 1)  # type: ignore[index]  # the sink's key change: the delete's offset
