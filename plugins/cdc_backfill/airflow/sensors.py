"""The sensor between the snapshot and the reconcile: waits until every window of the snapshot is in the
landed stream, so that no READ chunk is left waiting for its window (docs/design.md §6 rule 1)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseSensorOperator, Context
from airflow.sdk.exceptions import AirflowFailException

from cdc_backfill.airflow import plans
from cdc_backfill.airflow.triggers import (
    CdcTopicsDeliveredTrigger,
    CdcWindowsClosedTrigger,
    debezium_reported,
    debezium_scan,
    landed,
)
from cdc_backfill.capture.fence import stream_passed
from cdc_backfill.signals import debezium_windows


class CdcWindowsClosedSensor(BaseSensorOperator):
    """Wait until the landed stream has passed the snapshot's last close watermark.

    ``engine="native"``: each snapshot task wrote a fence into the stream after its last close watermark
    (``snapshots``: their results); done when the capture's landing zone holds a commit past the greatest
    fence (file names say how far it landed). ``engine="debezium"``: done when Debezium's windows in the
    signal table are all closed and no new one opened for ``quiet_seconds``
    (:class:`cdc_backfill.signals.debezium_debezium_windows.WindowWatch`).

    ``capture="kafka"``: done when the Kafka topics have delivered the snapshot's end
    (:class:`CdcTopicsDeliveredTrigger`: Debezium's COMPLETED, then a marker through the signal table's
    topic), for either engine.

    Pokes once in the worker (after a drain the answer is yes at once); else, with ``deferrable=True``,
    hands the wait to the triggerer.
    """

    template_fields: Sequence[str] = (
        "engine", "landing_dir", "snapshots", "baseline_windows", "source_conn_id", "signal_table", "capture",
        "signal_id", "topics", "kafka_conn_id",
    )  # fmt: skip
    valid_modes = ("poke",)  # Debezium's quiet period is measured across pokes of one process

    def __init__(
        self,
        *,
        landing_dir: Any,
        snapshots: Any = None,
        engine: Any = "native",
        source_conn_id: str = "",
        signal_table: str | None = None,
        baseline_windows: Any = None,
        quiet_seconds: float = 60.0,
        deferrable: bool = True,
        capture: Any = None,
        signal_id: Any = None,
        topics: Any = None,
        kafka_conn_id: Any = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("poke_interval", 5.0)
        kwargs.setdefault("timeout", 6 * 3600.0)
        super().__init__(**kwargs)
        self.landing_dir = landing_dir
        self.snapshots = snapshots
        self.engine = engine
        self.source_conn_id = source_conn_id
        self.signal_table = signal_table
        self.baseline_windows = baseline_windows
        self.quiet_seconds = quiet_seconds
        self.deferrable = deferrable
        self.capture = capture
        self.signal_id = signal_id
        self.topics = topics
        self.kafka_conn_id = kafka_conn_id
        self._watch: debezium_windows.WindowWatch | None = None

    def _mode(self) -> str:
        return plans.one_of(self.engine, "engine", plans.ENGINES)

    def _fence(self) -> int | None:
        snapshots = self.snapshots
        if snapshots is None:
            return None
        if isinstance(snapshots, dict):
            snapshots = [snapshots]
        return plans.fence_target(list(snapshots))

    def _baseline(self) -> int | None:
        text = plans.optional_text(self.baseline_windows)
        return int(text) if text else None

    def poke(self, context: Context) -> bool:
        if plans.optional_text(self.capture) == "debezium":
            # the drain ran Debezium's connector until it reported the snapshot's end, then drained
            self.log.info("capture debezium followed the snapshot to its end: nothing to wait for")
            return True
        if self._mode() == "debezium":
            reported = debezium_reported(str(self.landing_dir), plans.optional_text(self.signal_id))
            if reported == "ABORTED":
                raise AirflowFailException(f"Debezium's snapshot {self.signal_id} was stopped before its end")
            if reported:
                self.log.info("Debezium reported the snapshot %s completed", self.signal_id)
                return True
            if self._watch is None:
                self._watch = debezium_windows.WindowWatch(self.quiet_seconds, self._baseline())
            scan = debezium_scan(
                plans.optional_text(self.source_conn_id) or "", plans.optional_text(self.signal_table)
            )
            self.log.info("Debezium windows: %s opened, %s open", scan.windows, len(scan.open_ids))
            return self._watch.observe(scan, time.monotonic())
        fence = self._fence()
        if fence is None:
            self.log.info("no fence: no snapshot task finished a collection; nothing to wait for")
            return True
        position = landed(str(self.landing_dir))
        self.log.info("landed up to commit %s; fence at %s", position[0], fence)
        return stream_passed(position, fence)

    def execute(self, context: Context) -> Any:
        if plans.optional_text(self.capture) == "kafka":
            return self._topics(context)
        if not self.deferrable:
            return super().execute(context)
        if (self._mode() == "native" or plans.optional_text(self.capture) == "debezium") and self.poke(
            context
        ):
            return None
        self.defer(
            trigger=CdcWindowsClosedTrigger(
                engine=self._mode(),
                landing_dir=str(self.landing_dir),
                fence_lsn=self._fence(),
                source_conn_id=plans.optional_text(self.source_conn_id) or "",
                signal_table=plans.optional_text(self.signal_table),
                baseline_windows=self._baseline(),
                quiet_seconds=self.quiet_seconds,
                poll_seconds=self.poke_interval,
                signal_id=plans.optional_text(self.signal_id),
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.timeout),
        )

    def _topics(self, context: Context) -> Any:
        """``capture: kafka``: wait until the topics have delivered the snapshot's end
        (:class:`CdcTopicsDeliveredTrigger`), in the triggerer, or here when not deferrable."""
        trigger = CdcTopicsDeliveredTrigger(
            engine=self._mode(),
            topics=str(plans.optional_text(self.topics)),
            kafka_conn_id=plans.optional_text(self.kafka_conn_id) or plans.KAFKA_CONN_ID,
            source_conn_id=plans.optional_text(self.source_conn_id) or "",
            signal_table=plans.optional_text(self.signal_table),
            signal_id=plans.optional_text(self.signal_id),
            poll_seconds=self.poke_interval,
        )
        if not self.deferrable:
            return self.execute_complete(context, asyncio.run(first_event(trigger)))
        self.defer(trigger=trigger, method_name="execute_complete", timeout=timedelta(seconds=self.timeout))

    def execute_complete(self, context: Context, event: dict[str, Any] | None = None) -> dict[str, Any]:
        if event and event.get("status") == "aborted":
            raise AirflowFailException(
                f"Debezium's snapshot {event.get('signal_id')} was stopped before its end"
            )
        if event and event.get("status") == "failed":
            raise AirflowFailException(f"the wait for the topics failed: {event.get('reason')}")
        if not event or event.get("status") != "passed":
            raise AirflowFailException(f"the wait ended without passing: {event}")
        self.log.info("the stream has passed the snapshot's windows: %s", event)
        return event


async def first_event(trigger: Any) -> dict[str, Any]:
    """The payload of ``trigger``'s first event, run in this process."""
    async for event in trigger.run():
        return dict(event.payload)
    return {}
