"""``capture kafka`` (topic to typed log) next to a bare read of the same offsets by the same reader,
measured in the same run, in the same Spark session: Spark's Kafka source into the ``noop`` sink.

A local broker (Maven Central's jars), one topic a partition count (``--partitions 1 4 16``), each
holding ``--records`` Debezium PostgreSQL change records as Kafka Connect writes them with schemas off
(a row of five columns, its key, ``source.sequence``), produced once. Per partition count: the bare read
of the topic's whole offset range, then the capture of the same range into a fresh landing; each
``--repeat`` times, alternating, the median kept. The capture parses every record, types it, writes the
log files and their manifest; the bare read only moves the records through the JVM.

    python -m bench.kafka [--records 200000] [--partitions 1 4 16] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
from pathlib import Path

from bench.common import report, timed
from cdc_backfill.ingest.column_sources import ColumnSources, read_column_types
from cdc_backfill.ingest.spark.capture_kafka import capture_kafka
from cdc_backfill.kafka.broker import LocalKafka
from cdc_backfill.kafka.topics import Broker
from cdc_backfill.spark.packages import kafka_source
from cdc_backfill.spark.session import build_session

MASTER = "local[2]"
TYPES = {"public.t": {"key": ["id"], "columns": {"id": "bigint", "name": "text", "balance": "numeric(12,2)",
                                                 "active": "boolean", "score": "double precision"}}}  # fmt: skip


def record(i: int) -> tuple[bytes, bytes]:
    lsn = 1_000_000 + i * 8
    value = {
        "before": None,
        "after": {"id": i, "name": f"name {i}", "balance": f"{i % 1000}.25", "active": i % 2 == 0, "score": i / 7},
        "source": {"version": "3.6.1.Final", "connector": "postgresql", "name": "app", "ts_ms": 1700000000000 + i,
                   "snapshot": "false", "db": "app", "sequence": json.dumps([str(lsn - 8), str(lsn)]),
                   "schema": "public", "table": "t", "txId": 1000 + i, "lsn": lsn, "xmin": None},
        "op": "c",
        "ts_ms": 1700000000000 + i,
    }  # fmt: skip
    return json.dumps({"id": i}).encode(), json.dumps(value).encode()


def produce(bootstrap: str, topic: str, partitions: int, n: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout=60)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 50, "queue.buffering.max.messages": 1_000_000}
    )
    for i in range(n):
        key, value = record(i)
        producer.produce(topic, value=value, key=key)
        if i % 50_000 == 0:
            producer.poll(0)
    producer.flush(120)


def bare_read(spark, bootstrap: str, topic: str) -> None:  # type: ignore[no-untyped-def]
    """The reference: every record of ``topic`` through Spark's Kafka source into the ``noop`` sink."""
    reader = (
        spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
    )
    frame = reader.option("startingOffsets", "earliest").option("endingOffsets", "latest").load()
    frame.write.format("noop").mode("overwrite").save()


def one_capture(spark, broker: Broker, topic: str, landing: Path, types: Path) -> None:  # type: ignore[no-untyped-def]
    """``capture kafka --drain`` of ``topic`` into a fresh ``landing``, as the job runs it."""
    sources = ColumnSources(landing, "public.cdc_signal", None, read_column_types(types))
    summary = capture_kafka(spark, landing, broker, topic, sources)
    assert summary["records"] == summary["events"] > 0, summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-kafka-"))
    rows = []
    with LocalKafka(work / "broker") as kafka:
        spark = build_session("bench_kafka", master=MASTER, conf={"spark.jars.packages": kafka_source()})
        broker = Broker(kafka.bootstrap)
        types = work / "types.json"
        types.write_text(json.dumps(TYPES))
        for partitions in args.partitions:
            topic = f"bench{partitions}.public.t"
            produce(kafka.bootstrap, topic, partitions, args.records)
            bare, capture = [], []
            for n in range(args.repeat):
                bare.append(timed(lambda: bare_read(spark, kafka.bootstrap, topic))[0])  # noqa: B023
                landing = work / f"lake-{partitions}-{n}"
                capture.append(timed(lambda: one_capture(spark, broker, topic, landing, types))[0])  # noqa: B023
                shutil.rmtree(landing)
            b, c = statistics.median(bare), statistics.median(capture)
            rows.append({"measure": f"bare read, {partitions} partition(s) (reference)", "items": args.records,
                         "seconds": b, "rate": args.records / b})  # fmt: skip
            rows.append({"measure": f"capture kafka, {partitions} partition(s)", "items": args.records,
                         "seconds": c, "rate": args.records / c,
                         "reference": f"{b / c:.2f}x the bare read's rate",
                         "reference_name": "the bare read", "reference_seconds": b})  # fmt: skip
        spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    report("kafka", rows, {"records": args.records, "master": MASTER, "repeat": args.repeat})


if __name__ == "__main__":
    main()
