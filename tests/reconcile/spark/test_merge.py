"""The Spark reconcile agrees with the reference rules and with the source after a concurrent snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdc_backfill.reconcile.spark.job import reconcile_landing
from tests.support.judge import assert_consistent, columns_of, keyed_state, source_state
from tests.support.pg import snapshot_under_writers
from tests.support.state import state_frame
from tests.support.workload import seed

pytestmark = [pytest.mark.spark, pytest.mark.pg, pytest.mark.slow]

TABLES = ["public.orders", "public.lines", "public.words"]


def test_spark_state_equals_the_source_after_a_concurrent_snapshot(
    spark, fresh_db: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    seed(fresh_db, orders=600, lines=600)
    landing = tmp_path / "landing"
    snapshot_under_writers(fresh_db, landing, TABLES, chunk_size=41, seed_value=11)
    reference = assert_consistent(fresh_db, landing, TABLES)  # the judge first: the inputs are right
    assert reference.reads_dropped > 0
    reconcile_landing(spark, landing, tmp_path / "state")
    for coll in TABLES:
        _, key = columns_of(fresh_db, coll)
        got = keyed_state(state_frame(spark, tmp_path / "state", coll).collect(), key)
        want = source_state(fresh_db, coll, key)
        assert got.keys() == want.keys(), coll
        assert [k for k in want if got[k] != want[k]] == [], coll
        assert got == reference.state[coll]
    meta = pq.read_schema(next((landing / "snapshots" / "public.orders").glob("*.parquet"))).metadata
    assert json.loads(meta[b"cdc.key"]) == ["id"]
