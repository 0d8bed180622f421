"""DataWorks' records in ``sequenceId`` order whatever order they arrive in (issue 70): a random history
of two tables, shuffled within and across batches, ingested and reconciled after every batch; the state
after each batch equals the replay of everything delivered so far in ``sequenceId`` order."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from cdc_backfill.ingest.column_sources import ColumnSources
from cdc_backfill.ingest.spark.job import ingest_landing
from cdc_backfill.reconcile.spark.job import reconcile_landing
from tests.support.dataworks import TABLES, History, deliveries, record, replay
from tests.support.scripts import write_stream_file
from tests.support.state import state_frame

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SEEDS = int(os.environ.get("DATAWORKS_SEEDS", "3"))


def state_of(spark, state: Path) -> dict[str, dict[int, str]]:  # type: ignore[no-untyped-def]
    out: dict[str, dict[int, str]] = {c: {} for c in TABLES}
    for coll, key in TABLES.items():
        if (state / coll).is_dir():
            out[coll] = {r[key]: r["v"] for r in state_frame(spark, state, coll).collect()}
    return out


@pytest.mark.parametrize("seed_value", range(SEEDS))
def test_the_state_after_each_batch_is_the_replay_in_sequence_id_order(
    spark, tmp_path: Path, seed_value: int
) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(seed_value)
    history = History()
    for _ in range(rng.randint(60, 120)):
        history.step(rng)
    landing, state = tmp_path / "landing", tmp_path / "state"
    delivered: list[dict] = []
    for n, batch in enumerate(deliveries(history, rng, rng.randint(3, 6))):
        delivered += batch
        write_stream_file(landing, f"batch-{n:03d}.jsonl", batch)
        ingest_landing(spark, landing, None, ColumnSources(landing, "d.cdc_signal", None, None))
        reconcile_landing(spark, landing, state, signal_table="d.cdc_signal")
        assert state_of(spark, state) == replay(delivered), (
            f"seed {seed_value}, after batch {n}: {json.dumps([r['payload'] for r in batch])[:2000]}"
        )


def orders(seq: int, op: str, before: int | None = None, after: int | None = None) -> dict:
    row = lambda k: None if k is None else {"id": k, "v": f"v{seq}"}  # noqa: E731
    return record("d.orders", seq, op, before=row(before), after=row(after))


# each: the batches in the order they arrive, and the rows of d.orders (id -> v) after the last
LATE = {
    "a full-load insert arriving after later changes of other keys": (
        [[orders(20, "INSERT", after=2)], [orders(10, "INSERT", after=1)]], {1: "v10", 2: "v20"}),
    "a full-load insert arriving after its key's later delete": (
        [[orders(30, "DELETE", before=1)], [orders(10, "INSERT", after=1)]], {}),
    "a full-load insert arriving after its key moved (one record)": (
        [[orders(20, "UPDATE_AFTER", before=1, after=5)], [orders(10, "INSERT", after=1)]], {5: "v20"}),
    "a full-load insert arriving after its key moved (two records, two batches)": (
        [[orders(20, "UPDATE_AFTER", after=5)], [orders(10, "INSERT", after=1)], [orders(20, "UPDATE_BEFOR", before=1)]],
        {5: "v20"}),
    "an insert arriving after a later truncate": (
        [[orders(30, "TRUNCATE"), orders(40, "INSERT", after=2)], [orders(10, "INSERT", after=1)]], {2: "v40"}),
    "a late truncate empties what came before it, not after": (
        [[orders(10, "INSERT", after=1), orders(40, "INSERT", after=2)], [orders(30, "TRUNCATE")]], {2: "v40"}),
    "an update arriving before the insert it follows": (
        [[orders(20, "UPDATE_AFTER", before=1, after=1)], [orders(10, "INSERT", after=1)]], {1: "v20"}),
}  # fmt: skip


@pytest.mark.parametrize("case", LATE)
def test_a_late_record_takes_its_place_by_sequence_id(spark, tmp_path: Path, case: str) -> None:  # type: ignore[no-untyped-def]
    batches, expected = LATE[case]
    landing, state = tmp_path / "landing", tmp_path / "state"
    for n, batch in enumerate(batches):
        write_stream_file(landing, f"batch-{n:03d}.jsonl", batch)
        ingest_landing(spark, landing, None, ColumnSources(landing, "d.cdc_signal", None, None))
        summary = reconcile_landing(spark, landing, state, signal_table="d.cdc_signal")
    assert state_of(spark, state)["d.orders"] == expected
    # the last batch came after the state's position: each of its records was late
    assert summary["collections"]["d.orders"]["late_events"] == len(batches[-1])


def test_a_schema_change_is_in_the_summary_of_the_reconcile_that_reads_it(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing, state = tmp_path / "landing", tmp_path / "state"
    ddl = "ALTER TABLE orders ADD COLUMN note varchar(20)"
    write_stream_file(
        landing, "a.jsonl", [orders(10, "INSERT", after=1), record("d.orders", 11, "ALTER", ddl=ddl)]
    )
    ingest_landing(spark, landing, None, ColumnSources(landing, "d.cdc_signal", None, None))
    first = reconcile_landing(spark, landing, state, signal_table="d.cdc_signal")["collections"]["d.orders"]
    assert [(c["schema_change"], c["ddl"]) for c in first["schema_changes"]] == [("ALTER", ddl)]
    write_stream_file(landing, "b.jsonl", [orders(12, "INSERT", after=2)])
    ingest_landing(spark, landing, None, ColumnSources(landing, "d.cdc_signal", None, None))
    second = reconcile_landing(spark, landing, state, signal_table="d.cdc_signal")["collections"]["d.orders"]
    assert "schema_changes" not in second  # said once, by the run that read it
