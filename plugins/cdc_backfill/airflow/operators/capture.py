"""Land what the source has committed until now (the capture's drain)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException

from cdc_backfill.airflow import plans
from cdc_backfill.airflow.operators.base import CdcOperator, refuse
from cdc_backfill.lakepath import lake_path


class CdcCaptureDrainOperator(CdcOperator):
    """Land everything the source has committed until now (``cdc-backfill capture postgres --drain``).

    With ``capture="external"`` another process lands the stream (the capture DAG, ``capture --follow``
    or Debezium) and this task does nothing. A slot busy with another drain is waited for.
    ``capture="debezium"``: Debezium's connector runs in this task; with ``engine="debezium"`` it runs
    until Debezium reports the end of the snapshot ``signal_id`` (its windows closed), then drains.
    ``capture="kafka"``: nothing either; the reconcile task reads the topics in its own job.
    """

    template_fields: Sequence[str] = (
        "landing_dir",
        "capture",
        "collections",
        "source_conn_id",
        "signal_table",
        "engine",
        "signal_id",
    )

    def __init__(
        self,
        *,
        landing_dir: Any,
        capture: Any = "drain",
        collections: Any = None,
        slot: str | None = None,
        publication: str | None = None,
        max_seconds: float = 3600.0,
        busy_wait_seconds: float = 600.0,
        engine: Any = "native",
        signal_id: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.landing_dir = landing_dir
        self.capture = capture
        self.collections = collections
        self.slot = slot
        self.publication = publication
        self.max_seconds = max_seconds
        self.busy_wait_seconds = busy_wait_seconds
        self.engine = engine
        self.signal_id = signal_id

    def execute(self, context: Context) -> dict[str, Any] | None:
        from cdc_backfill.capture.publication import SlotInUse

        if plans.optional_text(self.capture) == "debezium":
            return self._debezium()
        if plans.optional_text(self.capture) == "kafka":
            self.log.info(
                "capture is kafka: the reconcile reads the topics, once the wait has seen their end"
            )
            return None
        if plans.optional_text(self.capture) != "drain":
            self.log.info("capture is external: another process lands the stream")
            return None
        hook = self.hook()
        landing = lake_path(str(self.landing_dir))
        give_up = time.monotonic() + self.busy_wait_seconds
        while True:
            try:
                stats = hook.drain(
                    landing, self.slot, self.publication, plans.as_list(self.collections), self.max_seconds
                )
                break
            except SlotInUse as exc:
                if time.monotonic() > give_up:
                    raise
                self.log.info("%s; waiting for it", exc)
                time.sleep(5)
        self.log.info(
            "drained: %s transactions, %s events, %s files", stats.transactions, stats.events, stats.files
        )
        return {"transactions": stats.transactions, "events": stats.events, "files": stats.files}

    def _debezium(self) -> dict[str, Any]:
        from cdc_backfill.capture.debezium.connector import DebeziumCaptureError, DebeziumRefused

        until = ()
        if plans.optional_text(self.engine) == "debezium" and plans.optional_text(self.signal_id):
            until = (str(plans.optional_text(self.signal_id)),)
        try:
            ran = self.hook().debezium_drain(lake_path(str(self.landing_dir)), until, self.max_seconds)
        except DebeziumRefused as exc:  # the CLI's refusals, in its words: one line, no retry helps
            raise refuse(exc) from exc
        except DebeziumCaptureError as exc:
            raise AirflowFailException(f"capture debezium: {exc}") from exc
        for sid, how in ran.snapshots.items():
            self.log.info("Debezium: snapshot %s %s", sid, how.lower())
            if how != "COMPLETED":
                raise AirflowFailException(f"Debezium's snapshot {sid} ended {how.lower()}, not completed")
        self.log.info("drained: %s records in %s files", ran.records, ran.files)
        return {"events": ran.records, "files": ran.files, "snapshots": ran.snapshots}
