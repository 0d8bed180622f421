"""The reconcile reads the typed event log: capture -> log -> reconcile gives the source, in one run and
in several, while writers insert, update, delete and change keys during the snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_backfill.capture.postgres.loop import PostgresCapture
from cdc_backfill.landing.layout import STREAM_DIR
from cdc_backfill.reconcile.spark.job import reconcile_landing
from cdc_backfill.snapshot.engine import SnapshotEngine
from tests.support.judge import columns_of, keyed_state, source_state
from tests.support.pg import InWindow, send
from tests.support.state import state_frame
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.spark, pytest.mark.pg, pytest.mark.slow]

TABLES = ["public.orders", "public.lines", "public.words"]


def state_of(spark, state: Path, collection: str, key: list[str]) -> dict:  # type: ignore[no-untyped-def]
    return keyed_state(state_frame(spark, state, collection).collect(), key)


def test_the_log_reconciles_to_the_source_in_one_run_and_in_several(
    spark, fresh_db: str, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    seed(fresh_db, orders=500, lines=500)
    landing, several, once = tmp_path / "landing", tmp_path / "several", tmp_path / "once"
    PostgresCapture(fresh_db, landing).run()
    writers = Writers(fresh_db, seed_value=5).start()
    try:
        send(fresh_db, *[t.replace(".", "\\.") for t in TABLES], chunk_size=37)
        engine = SnapshotEngine(fresh_db, landing, readers=2, window_hook=InWindow(fresh_db))
        engine.run()
        PostgresCapture(fresh_db, landing).run()  # a run in the middle: windows may straddle it
        first = reconcile_landing(spark, landing, several)
    finally:
        writers.stop()
    PostgresCapture(fresh_db, landing).run()
    assert not (landing / STREAM_DIR).exists()  # everything came from the log
    assert first["collections"]
    last = reconcile_landing(spark, landing, several)
    reconcile_landing(spark, landing, once)
    assert (
        sum(c["reads_dropped"] for c in last["collections"].values())
        + sum(c["reads_dropped"] for c in first["collections"].values())
        > 0
    )
    for coll in TABLES:
        _, key = columns_of(fresh_db, coll)
        want = source_state(fresh_db, coll, key)
        got = state_of(spark, several, coll, key)
        assert got.keys() == want.keys(), coll
        assert [k for k in want if got[k] != want[k]] == [], coll
        assert state_of(spark, once, coll, key) == got, coll
        assert last["collections"][coll]["reads_waiting"] == 0


def test_log_files_without_their_schema_document_are_refused_with_the_way_out(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import json

    from cdc_backfill.landing.event_log import describe
    from cdc_backfill.landing.layout import rolls_dir
    from cdc_backfill.pgtypes import PgColumn
    from cdc_backfill.reconcile.spark.job import LandingError

    landing = tmp_path / "landing"
    describe(landing, "public.t", [PgColumn("id", "integer", 23)], ["id"])
    rolls_dir(landing).mkdir(parents=True)
    manifest = {"files": ["public.cdc_signal/v0001/p0101-0102.parquet"], "position": [1, 2], "events": 1}
    (rolls_dir(landing) / "r01010102.json").write_text(json.dumps(manifest))
    with pytest.raises(LandingError, match=r"public\.cdc_signal: 1 log file\(s\) but no .*_schema\.json"):
        reconcile_landing(spark, landing, tmp_path / "state")
