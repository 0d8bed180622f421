"""Debezium landed the way Kafka Connect or Debezium Server lands it, as a process of its own:

    python -m tests.support.debezium_sink first|rest URL LANDING WATERMARKING TABLE...

The real PostgreSQL connector (embedded) lands the changes as ``capture debezium`` does, but its
notification topic is written as a Kafka sink writes it (files in the landing's stream folder, named by
topic, partition and first offset, each value in the converter's wrapper), and no notification log is
kept. A process of its own because Airflow replaces the SIGSEGV handler of the process that parses a
DAG, which a JVM started before in that process cannot survive.

``first``: create the connector's slot (its stream starts there; ``sink.ready`` beside the landing
says so), then run until Debezium reported its first chunk read and stop, as a worker is lost
(``sink.ended`` if the snapshot had ended by then). ``rest``: run until SIGTERM, the snapshot going on
from the connector's offsets. A connector merely held in its handler would read ahead as far as its
queue holds, so stopping it is what keeps the changes made meanwhile between its windows.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import cdc_backfill.capture.debezium.connector as debezium_module
from cdc_backfill.capture.debezium.connector import DebeziumCapture
from cdc_backfill.files import write_atomically
from cdc_backfill.landing.layout import stream_dir
from tests.support.debezium import dbz_drain, run_until, settings

TOPIC = "cdc_backfill.notifications"


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


def main(phase: str, url: str, landing: Path, watermarking: str, tables: tuple[str, ...]) -> None:
    s = settings(url, landing, tables, watermarking=watermarking)
    sunk: list[dict] = []
    if phase == "first":
        dbz_drain(url, s)
        (landing.parent / "sink.ready").touch()

    def as_a_sink_lands_them(folder: Path, notes: list[dict]) -> None:
        first = time.time_ns()  # as offsets go: growing, across both processes
        write_atomically(stream_dir(folder) / f"{TOPIC}+0+{first:020d}.json", sink_lines(notes, first))
        sunk.extend(notes)

    debezium_module.record_notifications = as_a_sink_lands_them  # type: ignore[assignment]
    if phase == "first":
        summary = run_until(s, lambda _cap: any(n["type"] == "IN_PROGRESS" for n in sunk))
        if summary.snapshots:
            (landing.parent / "sink.ended").touch()
        return
    DebeziumCapture(s).run(drain=False, stop_on_signals=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4], tuple(sys.argv[5:]))
