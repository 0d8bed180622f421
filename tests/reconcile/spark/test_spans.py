"""The stream marked by the chunks' key ranges and windows (no join) gives the state and the counts the
join of the READ rows' keys gives, after a snapshot under writers that change rows inside its windows."""

from __future__ import annotations

from pathlib import Path

import pytest

import cdc_backfill.reconcile.spark.runs as spark_runs
from cdc_backfill.reconcile.spark.job import reconcile_landing
from cdc_backfill.state.spark.frames import read_version
from cdc_backfill.state.table import current_version
from tests.support.judge import columns_of, keyed_state, source_state
from tests.support.pg import snapshot_under_writers
from tests.support.workload import seed

pytestmark = [pytest.mark.spark, pytest.mark.pg, pytest.mark.slow]

TABLES = ["public.orders", "public.words"]  # a bigint key and a text key


def test_marking_by_spans_equals_marking_by_join(
    spark, fresh_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    seed(fresh_db, orders=500)
    landing = tmp_path / "landing"
    snapshot_under_writers(fresh_db, landing, TABLES, chunk_size=100, seed_value=5)  # at most 16 chunks
    marked: list[int] = []
    spans = spark_runs.stream_spans

    def counted(*args):  # type: ignore[no-untyped-def]
        found = spans(*args)
        marked.append(len(found) if found is not None else 0)
        return found

    monkeypatch.setattr(spark_runs, "stream_spans", counted)
    by_spans = reconcile_landing(spark, landing, tmp_path / "by-spans", TABLES)
    assert len(marked) == 2 and min(marked) > 1, "both collections' streams marked by their chunks' spans"
    monkeypatch.setattr(spark_runs, "stream_spans", lambda *args: None)
    by_join = reconcile_landing(spark, landing, tmp_path / "by-join", TABLES)
    for coll in TABLES:
        a, b = by_spans["collections"][coll], by_join["collections"][coll]
        # the snapshot changes an order inside every window of orders: READ rows dropped there
        assert a["reads_dropped"] > 0 or coll != "public.orders", coll
        assert {k: a[k] for k in ("rows", "reads_applied", "reads_dropped")} == {
            k: b[k] for k in ("rows", "reads_applied", "reads_dropped")
        }, coll
        _, key = columns_of(fresh_db, coll)
        states = [
            keyed_state(read_version(spark, current_version(tmp_path / s, coll)).collect(), key)  # type: ignore[arg-type]
            for s in ("by-spans", "by-join")
        ]
        assert states[0] == states[1] == source_state(fresh_db, coll, key), coll
