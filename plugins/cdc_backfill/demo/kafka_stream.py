"""``cdc-backfill demo --kafka``: the demo's stream through a real Kafka broker and Kafka Connect running
Debezium's PostgreSQL connector, both local processes from Maven Central's jars (``cdc_backfill.kafka``).

Connect streams the sample tables and the signal table to topics from the moment it starts (it reads
no signals itself: the native engine snapshots, and its watermarks travel through Kafka); ``capture
kafka`` lands the topics in the log once the writer has stopped, after a marker row committed last has
reached its topic, so that everything committed before it is there to land.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from cdc_backfill.lakepath import LakePath
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE

PREFIX = "demo"


class KafkaStream:
    """The broker and the Connect worker of a demo, in ``folder``; the capturer's part in the demo (the
    worker follows the source by itself: :meth:`start` and :meth:`stop` have nothing to do)."""

    def __init__(self, folder: Path, url: str, landing: LakePath, tables: tuple[str, ...]) -> None:
        from cdc_backfill.kafka.broker import LocalKafka
        from cdc_backfill.kafka.connect_worker import LocalConnect

        self.url = url
        self.landing = landing
        self.broker = LocalKafka(folder / "kafka")
        self.connect = LocalConnect(
            self.broker.bootstrap, "postgresql://" + url.split("://", 1)[1], PREFIX, list(tables),
            schemas=False, folder=folder / "connect", engine="native",
        )  # fmt: skip

    def open(self) -> str:
        """The broker, then Connect RUNNING (Maven fetches their jars on first use); the bootstrap."""
        self.broker.start()
        self.connect.start()
        return self.broker.bootstrap

    def start(self) -> None:
        """Connect follows the source from its start."""

    def stop(self) -> None:
        """Nothing to stop before the drain: Connect keeps following."""

    def drain(self) -> None:
        """Wait until Connect has delivered everything committed so far."""
        self.connect.caught_up(self.url)

    def land(self, spark: Any) -> dict[str, Any]:
        """``capture kafka --drain`` of the demo's topics into the landing, in the demo's session."""
        from cdc_backfill.ingest.column_sources import ColumnSources, catalog_columns
        from cdc_backfill.ingest.spark.capture_kafka import capture_kafka
        from cdc_backfill.kafka.topics import Broker

        sources = ColumnSources(self.landing, DEFAULT_SIGNAL_TABLE, catalog_columns(self.url), None)
        pattern = re.escape(PREFIX) + r"\..*"
        return capture_kafka(spark, self.landing, Broker(self.broker.bootstrap), pattern, sources)

    def close(self) -> None:
        self.connect.close()
        self.broker.close()
