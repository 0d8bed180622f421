"""The Spark reconcile agrees with the reference rules and with the source after a concurrent snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdc_backfill.ingest.spark.parse import events_only, landing_events
from cdc_backfill.landing.spark.rows import as_log_rows, as_signal_rows
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.spark.merge import reconcile_collection
from tests.support.judge import assert_consistent, columns_of, keyed_state, source_state
from tests.support.pg import snapshot_under_writers
from tests.support.workload import seed

pytestmark = [pytest.mark.spark, pytest.mark.pg, pytest.mark.slow]

TABLES = ["public.orders", "public.lines", "public.words"]


def spark_state(spark, landing: Path, collection: str, columns: list[PgColumn], key: list[str]) -> dict:  # type: ignore[no-untyped-def]
    events = events_only(landing_events(spark, str(landing / "stream"))).cache()
    chunk_dir = landing / "snapshots" / collection
    reads = spark.read.parquet(str(chunk_dir)) if list(chunk_dir.glob("*.parquet")) else None
    rows = as_log_rows(events, collection, columns, key)
    state = reconcile_collection(rows, as_signal_rows(events, "public.cdc_signal"), reads, columns, key)
    return keyed_state(state.collect(), key)


def test_spark_state_equals_the_source_after_a_concurrent_snapshot(
    spark, fresh_db: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    seed(fresh_db, orders=600, lines=600)
    landing = tmp_path / "landing"
    snapshot_under_writers(fresh_db, landing, TABLES, chunk_size=41, seed_value=11, format="json")
    reference = assert_consistent(fresh_db, landing, TABLES)  # the judge first: the inputs are right
    assert reference.reads_dropped > 0
    for coll in TABLES:
        columns, key = columns_of(fresh_db, coll)
        got = spark_state(spark, landing, coll, columns, key)
        want = source_state(fresh_db, coll, key)
        assert got.keys() == want.keys(), coll
        assert [k for k in want if got[k] != want[k]] == [], coll
        assert got == reference.state[coll]
    meta = pq.read_schema(next((landing / "snapshots" / "public.orders").glob("*.parquet"))).metadata
    assert json.loads(meta[b"cdc.key"]) == ["id"]
