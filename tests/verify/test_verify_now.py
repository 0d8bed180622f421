"""Verify where no exact position can be had, while writers run: the source read now against the state
advanced over the landed stream, each differing range re-checked after a drain. A clean state never
"differs" (a range the writers keep changing may be reported as changing, apart); one state row changed
by hand in a range no writer touches is named."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_backfill.capture.catch_up import drain_landing, native_slot
from cdc_backfill.config import source_engine
from cdc_backfill.verify.compare import render
from cdc_backfill.verify.spark.at_position import verify_collections
from tests.support.cli import snapshot_as_typed
from tests.support.pg import plain_url, sql
from tests.support.runs import reconcile_here
from tests.support.tamper import corrupt_one_row
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.pg, pytest.mark.spark, pytest.mark.slow]

QUIET = 10_000_000  # keys from here on: no writer touches them (writers keep to ids up to 8,000)
QUIET_ROWS = 400


def test_a_clean_state_never_differs_and_a_changed_row_does(spark, fresh_db: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    seed(fresh_db, orders=300, lines=50)
    # a quiet block larger than the last two ranges (about 2,500 rows in 16 ranges), so that the last
    # range holds no key a writer touches, however the writers have moved the boundaries
    sql(
        fresh_db,
        f"INSERT INTO orders SELECT g, 'quiet', 1, NULL FROM generate_series({QUIET}, {QUIET + QUIET_ROWS - 1}) g",
    )
    url = plain_url(fresh_db)
    landing, state = tmp_path / "lake", tmp_path / "state"
    writers = Writers(fresh_db, seed_value=5).start()
    engine = source_engine(url)
    try:
        snapshot_as_typed(tmp_path, url, ["--collections", "public.orders", "--chunk-size", "40"])
        reconcile_here(spark, tmp_path / "lake", tmp_path / "state")
        slot = native_slot(landing)
        assert slot

        def run():  # type: ignore[no-untyped-def]
            writers.wait_for_changes(20)  # the source moves on after the state's position
            [done] = verify_collections(
                url, engine, state, ["public.orders"], 16, landing=landing, catch_up=None,
                refresh=lambda: drain_landing(url, landing, slot), not_exact="as a Debezium landing",
                signal_table="public.cdc_signal",
            )  # fmt: skip
            return done.report

        for _ in range(2):
            report = run()
            assert report.differing == [], render(report)
            assert report.extra["not_at_position"] == "as a Debezium landing"
            assert "not at one position" in render(report)

        corrupt_one_row(state, "public.orders", QUIET + QUIET_ROWS - 1)
        report = run()
        assert report.differing == [15], render(report)
        assert report.extra["rechecks"] >= 1 and "not_caught_up" not in report.extra
    finally:
        engine.dispose()
        writers.stop()
