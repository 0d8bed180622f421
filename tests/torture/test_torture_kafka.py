"""The consistency torture test with the stream read from Kafka: Debezium's PostgreSQL connector in a
real Kafka Connect worker writes every table and the signal table to topics of three partitions on a
real broker (so a key change's two halves may land in different partitions), the native engine
snapshots under seeded random writers (inserts, updates, deletes, key changes, TOAST-only updates, a
truncate inside a window; the Connect worker killed and started again inside a window), and ``capture
kafka`` reads the topics into the log in rounds; a reconcile
runs while the writers still write and one after the last drain. The state must equal the source,
every row and every value: the assertions of the native torture test. ``TORTURE_SEEDS`` seeds each
(one by default), JSON schemas on or off by seed."""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

import pytest

from cdc_backfill.reconcile.reread import plan_rereads
from cdc_backfill.reconcile.spark.job import reconcile_landing
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.snapshot.engine import SnapshotEngine
from tests.support.judge import assert_state_is_source, overlap
from tests.support.kafka import KafkaDrain, wait_for_snapshot
from tests.support.pg import send, sql
from tests.support.torture import TABLES, Torture
from tests.support.workload import Writers, seed

pytestmark = [pytest.mark.pg, pytest.mark.spark, pytest.mark.slow, pytest.mark.torture, pytest.mark.kafka]

# one a test by default (each starts a Connect worker and takes about twice a native seed), JSON schemas
# off for the native engine's first seed and on for Debezium's, alternating after; ``make torture SEEDS=N``
# runs N of each
SEEDS = int(os.environ.get("TORTURE_SEEDS", "1"))
PARTITIONS = 3


class KillConnect(Torture):
    """The torture's writes inside windows, and once, inside a random window, the Connect worker killed
    (SIGKILL) and started again: Debezium resumes from the offsets it last flushed and sends what came
    after them again, so the topics hold some changes and watermarks twice."""

    def __init__(self, url, rng, writers, connect) -> None:  # type: ignore[no-untyped-def]
        super().__init__(url, rng, writers)
        self.connect = connect
        self.kill_at = rng.randint(1, 6)
        self.killed = False
        self.lock = threading.Lock()  # two readers call the hook at once

    def __call__(self, shape, after) -> None:  # type: ignore[no-untyped-def]
        super().__call__(shape, after)
        with self.lock:
            if self.windows >= self.kill_at and not self.killed:
                self.connect.kill()
                self.connect.start()
                self.killed = True


def make_topics(bootstrap: str, prefix: str, tables: list[str]) -> None:
    """Each table's topic with :data:`PARTITIONS` partitions before Connect writes to it (the broker would
    make it with one)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(f"{prefix}.{t}", PARTITIONS, 1) for t in tables]
    for future in admin.create_topics(topics).values():
        future.result(timeout=60)


@pytest.mark.parametrize("seed_value", range(SEEDS))
def test_state_equals_the_source_with_the_stream_read_from_kafka(
    spark, fresh_db: str, tmp_path: Path, kafka_broker, start_connect, seed_value: int
) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(seed_value)
    seed(fresh_db, orders=rng.randint(150, 400), lines=rng.randint(150, 400), docs_every=4)
    SignalStore(fresh_db).init()
    prefix = f"tk{seed_value}-{os.getpid()}"
    make_topics(kafka_broker.bootstrap, prefix, [*TABLES, "public.cdc_signal"])
    schemas = seed_value % 2 == 1
    connect = start_connect(fresh_db, TABLES, prefix=prefix, schemas=schemas, engine="native")
    landing, state = tmp_path / "landing", tmp_path / "state"
    drain = KafkaDrain(fresh_db, connect, landing, spark)
    drain()
    writers = Writers(fresh_db, seed_value=seed_value, max_order=900, toast_moves=True).start()
    try:
        send(fresh_db, *[t.replace(".", "\\.") for t in TABLES], chunk_size=rng.randint(13, 61))
        hook = KillConnect(fresh_db, rng, writers, connect)  # a writer's change inside every window
        SnapshotEngine(fresh_db, landing, readers=rng.choice([1, 2]), window_hook=hook).run()
        drain()
        reconcile_landing(spark, landing, state)  # an incremental run while the writers still write
    finally:
        writers.stop()
    drain()
    seen = overlap(fresh_db, landing, TABLES)
    summary = reconcile_landing(spark, landing, state)
    incomplete = {c: i["rows_with_unknown_columns"] for c, i in summary["collections"].items()}
    if any(incomplete.values()):
        # rows whose old key's value was never known (moved before their chunk read them): re-read
        store = SignalStore(fresh_db)
        for plan in plan_rereads(state, TABLES):
            for sig in plan.signals:
                store.send(sig)
        store.sa_engine.dispose()
        SnapshotEngine(fresh_db, landing, readers=1).run()
        drain()
        summary = reconcile_landing(spark, landing, state)
    print(f"seed {seed_value} (schemas {'on' if schemas else 'off'}): incomplete rows re-read {incomplete}")
    assert all(info["rows_with_unknown_columns"] == 0 for info in summary["collections"].values())
    assert hook.windows >= hook.truncate_at, "the truncate happened"
    assert hook.killed, "Connect was killed mid-snapshot"
    assert seen.windows and seen.windows_with_changes == seen.windows, "writers changed rows in every window"
    for coll in TABLES:
        info = summary["collections"][coll]
        assert info["reads_waiting"] == 0 and info["windows_pending"] == 0, (coll, info)
    assert_state_is_source(fresh_db, state, TABLES)


@pytest.mark.parametrize("seed_value", range(SEEDS))
def test_debezium_snapshot_through_kafka_removes_lost_deletes_and_equals_the_source(
    spark, fresh_db: str, tmp_path: Path, kafka_broker, start_connect, seed_value: int
) -> None:  # type: ignore[no-untyped-def]
    """Debezium as the engine: its own incremental snapshot, read with its stream and its notifications
    from Kafka, under the writers; deletes lost upstream (two tables leave the connector's publication
    while rows are deleted and changed) are removed once Debezium's notification says the snapshot
    finished."""
    rng = random.Random(seed_value)
    seed(fresh_db, orders=rng.randint(150, 400), lines=rng.randint(150, 400), docs_every=4)
    SignalStore(fresh_db).init()
    prefix = f"td{seed_value}-{os.getpid()}"
    make_topics(kafka_broker.bootstrap, prefix, [*TABLES, "public.cdc_signal"])
    connect = start_connect(
        fresh_db, TABLES, prefix=prefix, schemas=seed_value % 2 == 0, chunk_size=rng.randint(13, 61)
    )
    landing, state = tmp_path / "landing", tmp_path / "state"
    drain = KafkaDrain(fresh_db, connect, landing, spark)
    patterns = [t.replace(".", "\\.") for t in TABLES]
    first = send(fresh_db, *patterns)  # the rows there before the stream
    assert wait_for_snapshot(connect, first) == "COMPLETED"
    drain()
    reconcile_landing(spark, landing, state)
    for stmt in (
        f"ALTER PUBLICATION {connect.publication} DROP TABLE orders, lines",
        "DELETE FROM orders WHERE id % 6 = 0",
        "UPDATE orders SET status = 'lost' WHERE id % 6 = 2",
        "DELETE FROM lines WHERE line_no = 1",
        f"ALTER PUBLICATION {connect.publication} ADD TABLE orders, lines",
    ):
        sql(fresh_db, stmt)
    writers = Writers(fresh_db, seed_value=seed_value, max_order=900, toast_moves=True).start()
    try:
        sid = send(fresh_db, *patterns)
        assert wait_for_snapshot(connect, sid) == "COMPLETED"
    finally:
        writers.stop()
    drain()
    summary = reconcile_landing(spark, landing, state)
    removed = sum(info["phantoms_removed"] for info in summary["collections"].values())
    if any(info["rows_with_unknown_columns"] for info in summary["collections"].values()):
        for plan in plan_rereads(state, TABLES):  # re-read through Debezium
            store = SignalStore(fresh_db)
            for sig in plan.signals:
                store.send(sig)
                assert wait_for_snapshot(connect, sig.id) == "COMPLETED"
            store.sa_engine.dispose()
        drain()
        summary = reconcile_landing(spark, landing, state)
    print(f"seed {seed_value}: {removed} phantoms removed")
    assert removed > 0, summary
    assert all(info["rows_with_unknown_columns"] == 0 for info in summary["collections"].values())
    assert_state_is_source(fresh_db, state, TABLES)


def test_a_connect_worker_killed_after_started_leaves_the_snapshot_waiting_and_a_new_one_repairs_it(
    spark, fresh_db: str, tmp_path: Path, kafka_broker, start_connect
) -> None:  # type: ignore[no-untyped-def]
    """Debezium as the engine, its worker killed (SIGKILL) as soon as it said STARTED: the reconcile of
    what the topics hold says the snapshot is waiting, and the state lacks the rows it has not read;
    the worker started again and a new execute-snapshot bring the state to the source."""
    seed(fresh_db, orders=400, lines=400, docs_every=10**9)
    SignalStore(fresh_db).init()
    connect = start_connect(fresh_db, TABLES, prefix=f"tw-{os.getpid()}", chunk_size=20)
    landing, state = tmp_path / "landing", tmp_path / "state"
    drain = KafkaDrain(fresh_db, connect, landing, spark)
    patterns = [t.replace(".", "\\.") for t in TABLES]
    lost = send(fresh_db, *patterns)
    assert wait_for_snapshot(connect, lost, kinds=("STARTED",)) == "STARTED"
    connect.kill()
    drain(caught_up=False)
    summary = reconcile_landing(spark, landing, state)
    said = summary["snapshots"][lost]
    assert said.startswith("waiting: Debezium said STARTED and no end of it is in the stream") and (
        "send a new execute-snapshot of its collections" in said
    ), said
    assert any(rows_in_state(state, t) < 400 for t in TABLES), (
        "the killed snapshot cannot have read every row"
    )

    connect.start()
    repair = send(fresh_db, *patterns)
    assert wait_for_snapshot(connect, repair) == "COMPLETED"
    drain()
    summary = reconcile_landing(spark, landing, state)
    assert repair not in summary.get("snapshots", {}), summary
    assert_state_is_source(fresh_db, state, TABLES)


def rows_in_state(state: Path, collection: str) -> int:
    """How many rows the collection's state holds (none before its first state)."""
    from cdc_backfill.landing.layout import collection_dir
    from tests.support.state import state_table

    return state_table(state, collection).num_rows if collection_dir(state, collection).is_dir() else 0
