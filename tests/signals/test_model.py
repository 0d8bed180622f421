from __future__ import annotations

import json

import pytest

from cdc_backfill.signals.model import (
    AdditionalCondition,
    Signal,
    SignalError,
    check_row_limits,
    new_signal_id,
)
from tests.support.paths import FIXTURES

SIGNALS = [
    Signal("a1", "execute-snapshot", ("public.orders", "public\\.cust.*"), "incremental"),
    Signal(
        "a2",
        "execute-snapshot",
        ("public.orders",),
        "incremental",
        conditions=(AdditionalCondition("public.orders", "status = 'open'"),),
        surrogate_key="order_no",
        chunk_size=500,
    ),
    Signal("a3", "execute-snapshot", ("s.t",), "incremental", condition="a > 1"),
    Signal("a4", "stop-snapshot", ("public.orders",), "incremental"),
    Signal("a5", "stop-snapshot", (), "incremental"),
    Signal("a6", "pause-snapshot", snapshot_type="incremental"),
    Signal("a7", "resume-snapshot", snapshot_type="incremental"),
    Signal("a8", "log", message="hello"),
]


@pytest.mark.parametrize("signal", SIGNALS, ids=[s.type + "-" + s.id for s in SIGNALS])
def test_every_signal_round_trips_through_its_row(signal: Signal) -> None:
    row = signal.row()
    assert Signal.from_row(row["id"], row["type"], row["data"]) == signal


def test_data_json_is_what_debezium_reads() -> None:
    data = json.loads(SIGNALS[1].data_json())
    assert data == {
        "data-collections": ["public.orders"],
        "type": "incremental",
        "additional-conditions": [{"data-collection": "public.orders", "filter": "status = 'open'"}],
        "surrogate-key": "order_no",
        "chunk-size": 500,
    }
    assert json.loads(SIGNALS[4].data_json()) == {"type": "incremental"}  # stop everything
    assert json.loads(SIGNALS[7].data_json()) == {"message": "hello"}


def test_fixture_signal_rows_are_understood() -> None:
    rows = json.loads((FIXTURES / "debezium_incremental_snapshot_read.json").read_text())["signals"]
    first, second, third = (Signal.from_row(r["id"], r["type"], r["data"]) for r in rows)
    assert first == Signal(
        "ad-hoc-1", "execute-snapshot", ("schema1.table1", "schema2.table2"), "incremental"
    )
    assert second.condition == "color=blue AND quantity>10"
    assert second.collections == ("schema1.products",)
    assert third == Signal("ad-hoc-1", "stop-snapshot", ("schema1.table1", "schema2.table2"), "incremental")


def test_unknown_keys_are_kept_for_debezium() -> None:
    s = Signal.from_row(
        "x", "execute-snapshot", '{"data-collections": ["a.b"], "type": "INCREMENTAL", "x-team": "ops"}'
    )
    assert s.snapshot_type == "incremental"
    assert s.extra == {"x-team": "ops"}
    assert json.loads(s.data_json())["x-team"] == "ops"


@pytest.mark.parametrize(
    ("type_", "data", "message"),
    [
        ("execute-snapshot", "{not json", "data is not valid JSON"),
        ("snapshot-now", "{}", "unknown signal type 'snapshot-now'"),
        ("execute-snapshot", "[1]", "data must be a JSON object"),
        ("execute-snapshot", '{"data-collections": [1], "type": "incremental"}', "must be a list of regular expressions"),
        ("execute-snapshot", '{"data-collections": ["a.b"]}', 'needs "type": "incremental"'),
        ("execute-snapshot", '{"data-collections": ["a.b"], "type": "incremental", "chunk-size": "10"}', "chunk-size must be a whole number"),
        ("execute-snapshot", '{"data-collections": ["a.b"], "type": "incremental", "additional-conditions": [{"filter": "a=1"}]}', '"data-collection" and "filter"'),
        ("log", "{}", "a log signal needs"),
    ],
)  # fmt: skip
def test_malformed_rows_are_refused_with_their_reason(type_: str, data: str, message: str) -> None:
    with pytest.raises(SignalError, match=message.replace("(", r"\(").replace('"', '"')):
        Signal.from_row("id", type_, data)


def test_row_limits() -> None:
    assert len(new_signal_id()) <= 42
    with pytest.raises(SignalError, match="id must be 1 to 42"):
        check_row_limits(Signal("x" * 43, "pause-snapshot"))
    huge = Signal("x", "execute-snapshot", tuple(f"schema.table_{i}" for i in range(200)), "incremental")
    with pytest.raises(SignalError, match="more than the signal table's 2048"):
        check_row_limits(huge)
