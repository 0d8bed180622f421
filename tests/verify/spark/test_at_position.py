"""The state verify compares: the state advanced over the landing's events it has not read, never over
those it has (a row changed by hand in the state must stay changed, where events arrive in any order too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_backfill.ingest.column_sources import ColumnSources
from cdc_backfill.ingest.spark.job import ingest_landing
from cdc_backfill.reconcile.spark.job import reconcile_landing
from cdc_backfill.verify.spark.at_position import state_at
from tests.support.dataworks import record
from tests.support.scripts import write_stream_file
from tests.support.tamper import corrupt_one_row

pytestmark = pytest.mark.spark

SIGNALS = "d.cdc_signal"


def land(spark, landing: Path, name: str, records: list[dict]) -> None:  # type: ignore[no-untyped-def]
    write_stream_file(landing, name, records)
    ingest_landing(spark, landing, None, ColumnSources(landing, SIGNALS, None, None))


def test_a_row_changed_by_hand_stays_changed_in_the_state_verify_compares(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing, state = tmp_path / "landing", tmp_path / "state"
    land(
        spark,
        landing,
        "a.jsonl",
        [record("d.orders", 10 + k, "INSERT", after={"id": k, "v": f"v{k}"}) for k in range(1, 6)],
    )
    reconcile_landing(spark, landing, state, signal_table=SIGNALS)
    corrupt_one_row(state, "d.orders", victim=3, status="by hand", column="v")
    # a later batch with an event before the state's position: late, not read yet, so it counts
    land(spark, landing, "b.jsonl", [record("d.orders", 9, "INSERT", after={"id": 9, "v": "late"})])
    rows = {r["id"]: r["v"] for r in state_at(spark, landing, state, "d.orders", None, SIGNALS).collect()}
    assert rows == {1: "v1", 2: "v2", 3: "by hand", 4: "v4", 5: "v5", 9: "late"}
