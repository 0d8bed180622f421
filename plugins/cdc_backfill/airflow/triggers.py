"""The trigger behind the deferrable sensor: polls from the triggerer until the stream has passed the
fences (native engine) or Debezium's windows are done, without holding a worker slot."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from cdc_backfill.capture.fence import stream_passed
from cdc_backfill.kafka.topics import BROKER_PATIENCE_S, BrokerUnavailable, KafkaError
from cdc_backfill.lakepath import lake_path
from cdc_backfill.signals import debezium_windows


def landed(landing: str) -> tuple[int, int]:
    """The greatest (commit LSN, LSN) the capture has landed in ``landing`` (file names only)."""
    from cdc_backfill.landing.stream import landed_position

    return landed_position(lake_path(landing))


def debezium_reported(landing: str, signal_id: str | None) -> str | None:
    """How Debezium said the snapshot ``signal_id`` ended (COMPLETED, ABORTED), if the landing holds
    its notifications (``capture debezium``); None otherwise. Debezium sends the notification after the
    snapshot's last READs, and the capture records it after landing them."""
    from cdc_backfill.landing.notifications import ended_snapshots

    return ended_snapshots(lake_path(landing)).get(signal_id) if signal_id else None


def debezium_scan(source_conn_id: str, signal_table: str | None) -> debezium_windows.WindowScan:
    from cdc_backfill.airflow.hooks import CdcSourceHook

    return debezium_windows.scan_windows(CdcSourceHook(source_conn_id, signal_table).window_rows())


class CdcWindowsClosedTrigger(BaseTrigger):
    """Fires ``{"status": "passed", ...}`` when the wait is over (see :class:`CdcWindowsClosedSensor`).

    Serialised with ids and paths only: the connection is resolved in the triggerer, so no password is
    written into the trigger table.
    """

    def __init__(
        self,
        *,
        engine: str,
        landing_dir: str,
        fence_lsn: int | None = None,
        source_conn_id: str = "",
        signal_table: str | None = None,
        baseline_windows: int | None = None,
        quiet_seconds: float = 60.0,
        poll_seconds: float = 5.0,
        signal_id: str | None = None,
    ) -> None:
        super().__init__()
        self.engine = engine
        self.landing_dir = landing_dir
        self.fence_lsn = fence_lsn
        self.source_conn_id = source_conn_id
        self.signal_table = signal_table
        self.baseline_windows = baseline_windows
        self.quiet_seconds = quiet_seconds
        self.poll_seconds = poll_seconds
        self.signal_id = signal_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "engine": self.engine,
                "landing_dir": self.landing_dir,
                "fence_lsn": self.fence_lsn,
                "source_conn_id": self.source_conn_id,
                "signal_table": self.signal_table,
                "baseline_windows": self.baseline_windows,
                "quiet_seconds": self.quiet_seconds,
                "poll_seconds": self.poll_seconds,
                "signal_id": self.signal_id,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        watch = debezium_windows.WindowWatch(self.quiet_seconds, self.baseline_windows)
        while True:
            # file and database reads block: off the triggerer's event loop
            if self.engine == "debezium":
                # Debezium's own word, when a `capture debezium` lands the stream: exact, and it also
                # works with insert_delete watermarking, whose windows leave no rows to scan
                reported = await asyncio.to_thread(debezium_reported, self.landing_dir, self.signal_id)
                if reported:
                    yield TriggerEvent({"status": "passed" if reported == "COMPLETED" else reported.lower()})
                    return
                scan = await asyncio.to_thread(debezium_scan, self.source_conn_id, self.signal_table)
                if watch.observe(scan, time.monotonic()):
                    yield TriggerEvent({"status": "passed", "windows": scan.windows})
                    return
                self.log.info("Debezium windows: %s opened, %s open", scan.windows, len(scan.open_ids))
            else:
                position = await asyncio.to_thread(landed, self.landing_dir)
                if self.fence_lsn is None or stream_passed(position, self.fence_lsn):
                    yield TriggerEvent({"status": "passed", "landed": list(position)})
                    return
                self.log.info("landed up to commit %s; waiting for one past %s", position[0], self.fence_lsn)
            await asyncio.sleep(self.poll_seconds)


class CdcTopicsDeliveredTrigger(BaseTrigger):
    """Fires ``{"status": "passed", ...}`` when the Kafka topics have delivered the snapshot's end
    (``capture: kafka``): with ``engine="debezium"`` first Debezium's notification that the snapshot
    ``signal_id`` ended (``{"status": "aborted"}`` when it was stopped); then, for both engines, a
    marker row committed into the signal table, which Debezium delivers after every change committed
    before it (``kafka.delivered``). Serialised with ids and names only: both connections are resolved
    in the triggerer, and a triggerer that restarts commits a marker of its own again."""

    def __init__(
        self,
        *,
        engine: str,
        topics: str,
        kafka_conn_id: str,
        source_conn_id: str = "",
        signal_table: str | None = None,
        signal_id: str | None = None,
        poll_seconds: float = 5.0,
    ) -> None:
        super().__init__()
        self.engine = engine
        self.topics = topics
        self.kafka_conn_id = kafka_conn_id
        self.source_conn_id = source_conn_id
        self.signal_table = signal_table
        self.signal_id = signal_id
        self.poll_seconds = poll_seconds

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "engine": self.engine,
                "topics": self.topics,
                "kafka_conn_id": self.kafka_conn_id,
                "source_conn_id": self.source_conn_id,
                "signal_table": self.signal_table,
                "signal_id": self.signal_id,
                "poll_seconds": self.poll_seconds,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            async for event in self._wait():
                yield event
        except KafkaError as exc:  # a broker down for longer than the patience, a topic missing
            yield TriggerEvent({"status": "failed", "reason": str(exc)})

    async def _wait(self) -> AsyncIterator[TriggerEvent]:
        from cdc_backfill.airflow.hooks import CdcKafkaHook, CdcSourceHook

        kafka = CdcKafkaHook(self.kafka_conn_id)
        if self.engine == "debezium" and self.signal_id:
            while True:
                ended = await self._patient(kafka.snapshot_end, self.topics, self.signal_id)
                if ended == "ABORTED":
                    yield TriggerEvent({"status": "aborted", "signal_id": self.signal_id})
                    return
                if ended:
                    self.log.info("Debezium's notification: snapshot %s %s", self.signal_id, ended.lower())
                    break
                self.log.info("no notification of snapshot %s's end on the topics yet", self.signal_id)
                await asyncio.sleep(self.poll_seconds)
        source = CdcSourceHook(self.source_conn_id, self.signal_table)
        table = await asyncio.to_thread(source.signal_table_name)
        topic, since = await self._patient(kafka.signal_topic, self.topics, table)
        marker = await asyncio.to_thread(source.write_marker)
        self.log.info("marker %s committed: waiting for it on %s", marker, topic)
        while not await self._patient(kafka.row_delivered, topic, marker, since):
            await asyncio.sleep(self.poll_seconds)
        yield TriggerEvent({"status": "passed", "marker": marker, "topic": topic})

    async def _patient(self, call: Any, *args: Any) -> Any:
        """``call(*args)`` off the event loop, tried again while the broker does not answer (a restart),
        for up to :data:`BROKER_PATIENCE_S`."""
        give_up = time.monotonic() + BROKER_PATIENCE_S
        while True:
            try:
                return await asyncio.to_thread(call, *args)
            except BrokerUnavailable as exc:
                if time.monotonic() > give_up:
                    raise
                self.log.warning("%s; trying again", exc)
                await asyncio.sleep(self.poll_seconds)
