"""The deferrable sensor's trigger, run on an event loop as the triggerer runs it."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from cdc_backfill.airflow.triggers import CdcWindowsClosedTrigger
from cdc_backfill.events.positions import position_key
from cdc_backfill.landing.manifests import commit_roll

pytestmark = pytest.mark.airflow


def _landed(landing: Path, commit: int, lsn: int) -> None:
    """A roll of the capture's log that completes (commit, lsn)."""
    commit_roll(landing, position_key((commit, lsn)), {"files": [], "position": [commit, lsn], "events": 0})


async def _first_event(trigger: CdcWindowsClosedTrigger, seconds: float = 30) -> object:
    async def first() -> object:
        async for event in trigger.run():
            return event.payload
        return None

    return await asyncio.wait_for(first(), seconds)


def test_native_fires_once_a_commit_at_or_past_the_fence_has_landed(tmp_path: Path) -> None:
    _landed(tmp_path, 90, 95)
    trigger = CdcWindowsClosedTrigger(
        engine="native", landing_dir=str(tmp_path), fence_lsn=100, poll_seconds=0.05
    )
    classpath, kwargs = trigger.serialize()
    assert classpath == "cdc_backfill.airflow.triggers.CdcWindowsClosedTrigger"
    assert "url" not in kwargs and kwargs["fence_lsn"] == 100  # ids and paths only: no password stored

    timer = threading.Timer(0.3, lambda: _landed(tmp_path, 100, 100))
    timer.start()
    payload = asyncio.run(_first_event(CdcWindowsClosedTrigger(**kwargs)))
    timer.join()
    assert payload == {"status": "passed", "landed": [100, 100]}


@pytest.mark.pg
def test_debezium_fires_when_its_windows_are_closed_and_quiet(
    fresh_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cdc_backfill.signals.store import SignalStore

    monkeypatch.setenv("CDC_BACKFILL_SOURCE_URL", fresh_db)
    SignalStore(fresh_db).init()
    engine = sa.create_engine(fresh_db)

    def debezium() -> None:  # what a Debezium connector writes while it snapshots: window after window
        for i in range(3):
            with engine.begin() as conn:
                for kind in ("open", "close"):
                    conn.execute(
                        sa.text("INSERT INTO cdc_signal VALUES (:id, :t, :d)"),
                        {
                            "id": f"w{i}-{kind}",
                            "t": f"snapshot-window-{kind}",
                            "d": '{"openWindowTimestamp": "x"}',
                        },
                    )

    timer = threading.Timer(0.3, debezium)
    timer.start()
    trigger = CdcWindowsClosedTrigger(
        engine="debezium", landing_dir=str(tmp_path), baseline_windows=0, quiet_seconds=0.5, poll_seconds=0.1
    )
    payload = asyncio.run(_first_event(trigger))
    timer.join()
    engine.dispose()
    assert payload == {"status": "passed", "windows": 3}


def test_debezium_fires_on_its_own_notification_in_the_landing(tmp_path: Path) -> None:
    """A `capture debezium` landing holds Debezium's notifications: the trigger takes its word, with no
    signal-table scan (none is reachable here), for either watermarking; a stopped snapshot is not passed."""
    from cdc_backfill.landing.notifications import record_notifications

    def trigger(sid: str) -> CdcWindowsClosedTrigger:
        return CdcWindowsClosedTrigger(
            engine="debezium", landing_dir=str(tmp_path), signal_id=sid, poll_seconds=0.1
        )

    record_notifications(tmp_path, [{"id": "s1", "type": "STARTED"}, {"id": "s1", "type": "COMPLETED"}])
    assert asyncio.run(_first_event(trigger("s1"))) == {"status": "passed"}
    record_notifications(tmp_path, [{"id": "s2", "type": "STARTED"}, {"id": "s2", "type": "COMPLETED"},
                                    {"id": "x9", "type": "ABORTED"}])  # fmt: skip
    assert asyncio.run(_first_event(trigger("s2"))) == {"status": "aborted"}
    assert trigger("s1").serialize()[1]["signal_id"] == "s1"


@pytest.mark.parametrize("watermarking", ["insert_insert", "insert_delete"])
def test_debezium_fires_on_its_notification_landed_by_a_sink(
    fresh_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, watermarking: str
) -> None:
    """Debezium landed through Kafka Connect or Debezium Server, its notification topic written by the sink
    into the landing's stream folder: the trigger takes the word from there, whether the watermarking left
    window rows (insert_insert) or deleted each open row at its close (insert_delete); the window scan
    alone would wait its quiet time out."""
    import json

    from cdc_backfill.landing.layout import stream_dir
    from cdc_backfill.signals.store import SignalStore

    monkeypatch.setenv("CDC_BACKFILL_SOURCE_URL", fresh_db)
    SignalStore(fresh_db).init()
    engine = sa.create_engine(fresh_db)

    def note(sid: str, kind: str) -> str:
        return json.dumps({"topic": "cdc_backfill.notifications", "partition": 0, "offset": 0, "key": None,
                           "value": {"id": sid, "aggregate_type": "Incremental Snapshot", "type": kind,
                                     "additional_data": {}}})  # fmt: skip

    stream_dir(tmp_path).mkdir(parents=True)
    sink = stream_dir(tmp_path) / "cdc_backfill.notifications-0.json"
    sink.write_text(note("s1", "STARTED") + "\n")

    def debezium() -> None:  # a window as each watermarking leaves it, then the sink lands the end
        with engine.begin() as conn:
            for kind in ("open", "close"):
                row = {"id": f"w1-{kind}", "t": f"snapshot-window-{kind}", "d": None}
                if watermarking == "insert_delete" and kind == "close":
                    conn.execute(sa.text("DELETE FROM cdc_signal WHERE id = 'w1-open'"))
                else:
                    conn.execute(sa.text("INSERT INTO cdc_signal VALUES (:id, :t, :d)"), row)
        sink.write_text(note("s1", "STARTED") + "\n" + note("s1", "COMPLETED") + "\n")

    timer = threading.Timer(0.3, debezium)
    timer.start()
    trigger = CdcWindowsClosedTrigger(
        engine="debezium", landing_dir=str(tmp_path), signal_id="s1", baseline_windows=0, quiet_seconds=600,
        poll_seconds=0.1,
    )  # fmt: skip
    try:
        assert asyncio.run(_first_event(trigger)) == {"status": "passed"}
    finally:
        timer.join()
        engine.dispose()


@pytest.mark.kafka
def test_topics_fire_after_debeziums_end_and_then_the_marker_through_them(
    fresh_db: str, source_conn: str, kafka_broker, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Records produced as Debezium writes them, on a real broker: no marker while the snapshot runs;
    once COMPLETED is on the notification topic a marker is committed, and the wait ends when the
    signal table's topic delivers it."""
    from cdc_backfill.airflow.triggers import CdcTopicsDeliveredTrigger
    from cdc_backfill.signals.store import SignalStore
    from tests.airflow.conftest import kafka_conn
    from tests.support.kafka import note, produce, signal_row, unique_name

    store = SignalStore(fresh_db)
    store.init()
    prefix = unique_name("wait").replace("-", "_")
    bootstrap = kafka_broker.bootstrap
    produce(bootstrap, f"{prefix}.public.cdc_signal", [signal_row("s1")])
    produce(bootstrap, f"{prefix}.notifications", [note("s1", "STARTED")], partitions=1)
    trigger = CdcTopicsDeliveredTrigger(
        engine="debezium", topics=f"{prefix}\\..*", kafka_conn_id=kafka_conn(bootstrap, monkeypatch),
        source_conn_id=source_conn, signal_id="s1", poll_seconds=0.1,
    )  # fmt: skip
    _, kwargs = trigger.serialize()
    assert bootstrap not in json.dumps(kwargs)  # ids and names only: the connections stay in Airflow

    def markers() -> list[str]:
        return [row[0] for row in store.rows() if row[0].startswith("marker-")]

    result: list[object] = []
    waiter = threading.Thread(target=lambda: result.append(asyncio.run(_first_event(trigger, 120))))
    waiter.start()
    time.sleep(2)
    assert waiter.is_alive() and not markers(), "no marker before Debezium said the snapshot ended"
    produce(bootstrap, f"{prefix}.notifications", [note("s1", "COMPLETED")], partitions=1)
    give_up = time.monotonic() + 60
    while not markers() and time.monotonic() < give_up:
        time.sleep(0.1)
    [row] = markers()
    time.sleep(1)
    assert waiter.is_alive(), "the marker must come through the topic"
    produce(bootstrap, f"{prefix}.public.cdc_signal", [signal_row(row, schema=True)])
    waiter.join(60)
    assert result == [{"status": "passed", "marker": row, "topic": f"{prefix}.public.cdc_signal"}]
