"""Debezium landed the way Kafka Connect or Debezium Server lands it, as a process of its own:

    python -m tests.support.debezium_sink URL LANDING WATERMARKING TABLE...

The real PostgreSQL connector (embedded) lands the changes as ``capture debezium`` does, but its
notification topic is written as a Kafka sink writes it (files in the landing's stream folder, named by
topic, partition and first offset, each value in the converter's wrapper), and no notification log is
kept. A process of its own because Airflow replaces the SIGSEGV handler of the process that parses a
DAG, which a JVM started before in that process cannot survive.

Files beside the landing tell the test where it stands: ``sink.ready`` once the connector's slot exists
(its stream starts there), ``sink.held`` when Debezium reported its first chunk read; it then waits for
``sink.release`` (the test's writers have made their changes meanwhile). SIGTERM stops it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import cdc_backfill.capture.debezium as debezium_module
from cdc_backfill.capture.debezium import DebeziumCapture
from cdc_backfill.files import write_atomically
from cdc_backfill.layout import stream_dir
from tests.support.debezium import dbz_drain, settings

TOPIC = "cdc_backfill.notifications"
HOLD_LIMIT_S = 300.0


def sink_lines(notes: list[dict], first: int) -> bytes:
    """Notifications as a Kafka sink writes their records (pure)."""
    return b"".join(
        json.dumps({
            "topic": TOPIC, "partition": 0, "offset": first + i, "key": None,
            "value": {"schema": {"type": "struct", "optional": False},
                      "payload": {**n, "aggregate_type": "Incremental Snapshot"}},
        }).encode() + b"\n"
        for i, n in enumerate(notes)
    )  # fmt: skip


def main(url: str, landing: Path, watermarking: str, tables: tuple[str, ...]) -> None:
    s = settings(url, landing, tables, watermarking=watermarking)
    dbz_drain(url, s)
    (landing.parent / "sink.ready").touch()
    sunk: list[dict] = []
    held = landing.parent / "sink.held"

    def as_a_sink_lands_them(folder: Path, notes: list[dict]) -> None:
        if not held.exists() and any(n["type"] == "IN_PROGRESS" for n in notes):
            held.touch()
            give_up = time.monotonic() + HOLD_LIMIT_S
            while not (landing.parent / "sink.release").exists() and time.monotonic() < give_up:
                time.sleep(0.05)
        name = f"{TOPIC}+0+{len(sunk):010d}.json"
        write_atomically(stream_dir(folder) / name, sink_lines(notes, len(sunk)))
        sunk.extend(notes)

    debezium_module.record_notifications = as_a_sink_lands_them  # type: ignore[assignment]
    DebeziumCapture(s).run(drain=False, stop_on_signals=True)


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), sys.argv[3], tuple(sys.argv[4:]))
