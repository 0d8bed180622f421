"""The snapshot state machine's statuses and rollups (pure)."""

from __future__ import annotations

import json

from cdc_backfill.signals.statuses import (
    FINISHED,
    UNFINISHED,
    RangeStatus,
    SignalStatus,
    rollup,
    signal_rollup,
)


def test_statuses_are_the_strings_the_tables_hold() -> None:
    assert json.dumps([SignalStatus.PAUSED, RangeStatus.DONE]) == '["paused", "done"]'
    assert f"{RangeStatus.DONE:<6}|" == "done  |" and SignalStatus.RUNNING == "running"
    assert set(UNFINISHED) | set(FINISHED) == set(RangeStatus)


def test_a_collection_rolls_up_from_its_ranges() -> None:
    assert rollup([]) == "not-started"
    assert rollup(["pending", "pending"]) == "pending"
    assert rollup(["pending"], chunks=1) == "running"
    assert rollup(["pending", "done"]) == "running"
    assert rollup(["pending", "failed"], paused=True) == "paused"
    assert rollup(["done", "stopped"]) == "stopped" and rollup(["done", "failed", "stopped"]) == "failed"
    assert rollup(["done", "done"]) == "done"


def test_a_signal_rolls_up_from_all_its_ranges() -> None:
    assert signal_rollup([], "accepted", all_planned=False) == "accepted"
    assert signal_rollup(["done"], "accepted", all_planned=False) == "running"
    assert signal_rollup(["done", "failed"], "running", all_planned=True) == "done"
    assert signal_rollup(["failed"], "running", all_planned=True) == "failed"
    assert signal_rollup(["stopped"], "running", all_planned=True) == "stopped"
