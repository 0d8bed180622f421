"""The short path for the common PostgreSQL record (``events.debezium.plain_postgres``) gives exactly the
events and quarantine entries the general path gives, line for line, the stream's state included."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from cdc_backfill.events import debezium
from cdc_backfill.events.model import UNAVAILABLE
from cdc_backfill.events.parse import parse_lines
from cdc_backfill.events.positions import PgStream


def _capture(op: str, key: int, lsn: int, commit: int, txid: int = 7, **source: Any) -> dict[str, Any]:
    row = {"id": key, "name": f"n{key}", "balance": "1.10", "active": True}
    return {
        "key": {"id": key},
        "value": {
            "before": {"id": key} if op in "ud" else None,
            "after": None if op == "d" else row,
            "source": {"connector": "postgresql", "ts_ms": 1700, "snapshot": "false", "db": "app",
                       "schema": "public", "table": "t", "txId": txid, "commit_lsn": commit, "lsn": lsn,
                       **source},
            "op": op,
            "ts_ms": 1701,
        },
    }  # fmt: skip


def _sink(op: str, key: int, offset: int, lsn: int | None, **outer: Any) -> dict[str, Any]:
    record = _capture(op, key, lsn or 0, 0)
    source = record["value"]["source"]
    del source["commit_lsn"]
    source["lsn"] = lsn
    source["sequence"] = f'["{lsn}","{lsn}"]'
    return {"partition": 0, "offset": offset, **record, **outer}


def _variant(record: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(record)
    at = out
    for part in path[:-1]:
        at = at[part]
    if value is KeyError:
        del at[path[-1]]
    else:
        at[path[-1]] = value
    return out


def _lines() -> list[bytes]:
    base = _capture("u", 1, 100, 120)
    records: list[Any] = [
        _capture("c", 1, 10, 20),
        base,
        # a key change: delete and create at one WAL record, and a delete that is none
        _capture("d", 1, 200, 220),
        _capture("c", 2, 200, 220),
        _capture("d", 3, 300, 320),
        _capture("c", 4, 310, 320),
        _capture("r", 5, 400, 420, snapshot="incremental"),
        # a sink's records: offsets, no commit LSN, a key change among them, a tombstone between
        _sink("c", 6, 1, 500),
        _sink("d", 6, 2, 600),
        {"partition": 0, "offset": 3, "key": {"id": 6}, "value": None},
        _sink("c", 7, 4, 600),
        _sink("r", 8, 5, None),
        # records the short path leaves to the general one
        _variant(base, ("value", "source", "commit_lsn"), "0/78"),
        _variant(base, ("value", "source", "commit_lsn"), True),
        _variant(base, ("value", "source", "lsn"), None),
        _variant(base, ("value", "source", "lsn"), -1),
        _variant(base, ("value", "source", "connector"), "PostgreSQL"),
        _variant(
            base, ("value", "source", "schema"), "a.b"
        ),  # (taken: its name quoted as the general path does)
        _variant(base, ("value", "source", "table"), ""),
        _variant(base, ("value", "source", "table"), KeyError),
        _variant(base, ("value", "source", "ts_ms"), "1700"),
        _variant(base, ("value", "source", "ts_ms"), -5),
        _variant(base, ("value", "source", "snapshot"), True),
        _variant(base, ("value", "after", "name"), UNAVAILABLE),
        _variant(base, ("value", "after", "name"), [UNAVAILABLE]),
        _variant(base, ("value", "after"), None),
        _variant(base, ("value", "after"), [1]),
        _variant(base, ("value", "before"), "x"),
        _variant(base, ("value", "op"), "t"),
        _variant(base, ("value", "op"), "x"),
        _variant(base, ("value", "source"), "x"),
        _variant(base, ("key",), None),
        _variant(base, ("key",), {"schema": {"type": "struct"}, "payload": {"id": 1}}),
        _variant(base, ("key",), [1]),
        _variant(base, ("op",), "c"),
        _variant(base, ("payload",), None),
        _variant(base, ("value_schema",), "v1"),
        _variant(_sink("u", 9, 6, 700), ("partition",), None),
        _variant(_sink("u", 9, 7, 700), ("partition",), "0"),
        _variant(_sink("u", 9, 8, 700), ("offset",), "8"),
        _variant(_sink("u", 9, 9, 700), ("offset",), -1),
        {"schemas": {"v1": {"type": "struct", "fields": []}}},
        _capture("c", 10, 800, 820)["value"],  # the value alone
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
