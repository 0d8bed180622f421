"""Position order equals source order, for every format (property tests)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc_backfill.events import ParseError, parse_record
from cdc_backfill.events import positions as pos


def _sqlserver_lsn(n: int) -> str:
    h = f"{n:020X}"
    return f"{h[:8]}:{h[8:16]}:{h[16:]}"


def _sqlserver_event(commit: int, change: int, serial: int) -> dict:
    return {
        "key": {"id": 1},
        "value": {"before": None, "after": {"id": 1}, "op": "c",
                  "source": {"connector": "sqlserver", "schema": "dbo", "table": "t",
                             "commit_lsn": _sqlserver_lsn(commit), "change_lsn": _sqlserver_lsn(change),
                             "event_serial_no": str(serial)}},
    }  # fmt: skip


def _oracle_event(commit_scn: int, scn: int) -> dict:
    return {
        "key": {"ID": 1},
        "value": {"before": None, "after": {"ID": 1}, "op": "c",
                  "source": {"connector": "oracle", "schema": "S", "table": "T",
                             "scn": str(scn), "commit_scn": str(commit_scn)}},
    }  # fmt: skip


def _dataworks_event(op: str, seq: int) -> dict:
    image = {"dataColumn": {"id": 1}}
    return {
        "schema": {"dataColumn": [{"name": "id", "type": "LONG"}], "primaryKey": ["id"],
                   "source": {"dbName": "d", "tableName": "t"}},
        "payload": {"before": image if op != "INSERT" else None,
                    "after": image if op in ("INSERT", "UPDATE_AFTER") else None,
                    "sequenceId": str(seq), "op": op},
    }  # fmt: skip


def _pg_event(last_commit: int, lsn: int) -> dict:
    return {
        "key": {"id": 1},
        "value": {"before": None, "after": {"id": 1}, "op": "c",
                  "source": {"connector": "postgresql", "schema": "s", "table": "t", "lsn": lsn,
                             "sequence": f'["{last_commit}","{lsn}"]'}},
    }  # fmt: skip


def position_of(record: dict) -> tuple[int, ...]:
    [event] = parse_record(record)
    return event.position


LSN80 = st.integers(min_value=0, max_value=16**20 - 1)
BIG = st.integers(min_value=0, max_value=10**30)


@given(st.tuples(LSN80, LSN80, st.integers(0, 10**6)), st.tuples(LSN80, LSN80, st.integers(0, 10**6)))
def test_sqlserver_order_is_numeric_lsn_order(a: tuple[int, int, int], b: tuple[int, int, int]) -> None:
    assert (position_of(_sqlserver_event(*a)) < position_of(_sqlserver_event(*b))) == (a < b)


def test_sqlserver_hex_digits_compare_as_numbers() -> None:
    # as strings "0000000A..." < "00000009..." is False; as numbers A (10) comes after 9
    later = position_of(_sqlserver_event(0x0000000A_00000000_0000, 0, 1))
    earlier = position_of(_sqlserver_event(0x00000009_FFFFFFFF_FFFF, 0, 1))
    assert earlier < later


@given(st.tuples(BIG, BIG), st.tuples(BIG, BIG))
def test_oracle_order_is_numeric_scn_order(a: tuple[int, int], b: tuple[int, int]) -> None:
    assert (position_of(_oracle_event(*a)) < position_of(_oracle_event(*b))) == (a < b)


def test_oracle_scn_10_is_after_9() -> None:
    assert position_of(_oracle_event(9, 9)) < position_of(_oracle_event(10, 10))


@given(BIG, BIG)
def test_dataworks_order_is_sequence_then_before_half_first(s1: int, s2: int) -> None:
    before = parse_record(_dataworks_event("UPDATE_BEFOR", s1))[0].position
    after = parse_record(_dataworks_event("UPDATE_AFTER", s1))[0].position
    assert before < after
    other = parse_record(_dataworks_event("INSERT", s2))[0].position
    assert (after < other) == (s1 < s2)


@given(st.tuples(BIG, BIG), st.tuples(BIG, BIG))
def test_debezium_postgres_order_is_sequence_order(a: tuple[int, int], b: tuple[int, int]) -> None:
    assert (position_of(_pg_event(*a)) < position_of(_pg_event(*b))) == (a < b)


@given(st.integers(0, 2**64 - 1))
def test_pg_lsn_text_and_integer_forms_agree(n: int) -> None:
    assert pos.pg_lsn(f"{n >> 32:X}/{n & 0xFFFFFFFF:X}") == pos.pg_lsn(n) == n


@pytest.mark.parametrize("bad", ["0000000G:00000000:0000", "27:758:3", None, 12])
def test_bad_sqlserver_lsns_are_refused(bad: object) -> None:
    with pytest.raises(ParseError):
        pos.sqlserver_lsn(bad)


def test_integers_of_any_size_survive_json() -> None:
    from cdc_backfill.events.parse import loads

    huge = 2**100
    record = loads(f'{{"n": {huge}}}')
    assert record["n"] == huge


POSITIONS = st.lists(st.integers(0, 2**200), max_size=4).map(tuple)


@given(POSITIONS, POSITIONS)
def test_position_keys_sort_as_the_positions_do(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    ka, kb = pos.position_key(a), pos.position_key(b)
    assert (ka < kb, ka == kb) == (a < b, a == b)  # bytes compare unsigned, as Spark and DuckDB do
    assert pos.position_of_key(ka) == a


def test_position_keys_at_the_edges() -> None:
    assert pos.position_key(()) == b""
    assert pos.position_key((0, 1)) == b"\x00\x01\x01"
    lsn80 = (2**80 - 1, 2**80 - 2, 3)  # SQL Server: commit LSN, change LSN, event serial
    assert pos.position_key(lsn80) > pos.position_key((2**64, 0, 0))
    with pytest.raises(ValueError, match="negative"):
        pos.position_key((-1,))
    with pytest.raises(ValueError, match="ends inside"):
        pos.position_of_key(b"\x02\x01")


def _pg_line(op: str, sequence: list, tx: int, before: dict | None, after: dict | None) -> str:
    import json

    key = {"id": (after or before or {})["id"]}
    return json.dumps(
        {"key": key, "value": {"before": before, "after": after, "op": op,
         "source": {"connector": "postgresql", "schema": "public", "table": "t", "txId": tx,
                    "sequence": json.dumps(sequence)}}}
    )  # fmt: skip


def test_a_null_last_commit_after_a_restart_sorts_after_what_came_before(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Debezium's first transaction after a restart has ``sequence[0]`` null: without delivery offsets it
    is placed after everything delivered before it in the same file, and before what follows."""
    from cdc_backfill.events import parse_file

    lines = [
        _pg_line("u", ["100", "110"], 7, None, {"id": 1, "v": "b"}),
        _pg_line("u", ["120", "125"], 8, None, {"id": 2, "v": "b"}),
        # the connector restarted: the delete of key 1 comes with a null last commit, two changes
        _pg_line("d", [None, "150"], 9, {"id": 1}, None),
        _pg_line("c", [None, "151"], 9, None, {"id": 3}),
        _pg_line("c", ["160", "170"], 10, None, {"id": 1, "v": "again"}),
    ]
    path = tmp_path / "dbz.jsonl"
    path.write_text("\n".join(lines) + "\n")
    parsed = parse_file(str(path))
    assert not parsed.quarantined, parsed.quarantined
    events = parsed.events
    positions = [e.position for e in events]
    assert positions == sorted(positions), positions  # delivery order is commit order here
    assert positions[2] == (126, 150) and positions[3] == (126, 151)
    assert max(events, key=lambda e: e.position if e.key == {"id": 1} else ()).op == "c"

    import json
    import subprocess
    import sys

    printed = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "events", "parse", str(path)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    by_cli = [tuple(json.loads(line)["position"]) for line in printed.splitlines() if line.startswith("{")]
    assert by_cli == positions  # `events parse` places them the same way
