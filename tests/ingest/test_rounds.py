"""Rounds of a following capture (pure): a failed round is tried again only while following, and only
for so long; the summaries add up."""

from __future__ import annotations

import pytest

from cdc_backfill.ingest.rounds import Rounds


def test_a_drain_is_one_round_and_a_failure_ends_it() -> None:
    rounds = Rounds(None)
    assert list(rounds) == [0]
    with pytest.raises(RuntimeError, match="down"):
        rounds.retry(RuntimeError("down"), "the broker is down")


def test_following_tries_again_until_patience_runs_out(caplog: pytest.LogCaptureFixture) -> None:
    rounds = Rounds(0.0, patience=60.0)
    rounds.retry(RuntimeError("down"), "the broker is down")  # no raise: the next round tries again
    assert "the broker is down; trying again" in caplog.text
    impatient = Rounds(0.0, patience=-1.0)
    with pytest.raises(RuntimeError):
        impatient.retry(RuntimeError("down"), "the broker is down")


def test_following_stops_when_told_and_the_summaries_add_up() -> None:
    rounds = Rounds(0.0)
    for n in rounds:
        rounds.add(
            {
                "events": 3,
                "records": 4,
                "collections": {"public.t": {"events": 3, "files": 1}},
                "run": f"r{n}",
            }
        )
        if n == 2:
            rounds.stop()
    assert rounds.total["rounds"] == 3 and rounds.total["events"] == 9 and rounds.total["records"] == 12
    assert (
        rounds.total["collections"] == {"public.t": {"events": 9, "files": 3}} and rounds.total["run"] == "r2"
    )
