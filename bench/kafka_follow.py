"""``capture kafka --follow``'s freshness: how long after its commit a change is in the log, next to how
long after its commit Kafka Connect has it on its topic (a bare consumer watching the topic), measured
on the same changes in the same run.

An embedded PostgreSQL with one table, a local broker and Kafka Connect running Debezium (Maven
Central's jars), and ``cdc-backfill capture kafka --follow`` started as a user starts it. A writer
commits one insert every ``--every`` seconds, ``--changes`` of them; each change's commit time, the
time the consumer first saw it, and the time a manifest first named a log file holding it are kept.

    python -m bench.kafka_follow [--changes 60] [--every 0.5] [--interval 1]
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import sqlalchemy as sa

from bench.common import report
from cdc_backfill.kafka.broker import LocalKafka
from cdc_backfill.kafka.connect_worker import LocalConnect
from cdc_backfill.landing.manifests import roll_manifests
from cdc_backfill.pg.embedded import EmbeddedPostgres
from cdc_backfill.signals.store import SignalStore

TOPIC_PREFIX = "fresh"


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) >= 20 else max(values)


def watch_topic(bootstrap: str, topic: str, seen: dict[int, float], stop: threading.Event) -> None:
    """The reference: a bare consumer, each change's first sight on the topic."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-fresh", "log_level": "2"})
    assigned = False
    while not stop.is_set():
        if not assigned:
            meta = consumer.list_topics(topic, timeout=5).topics.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                time.sleep(0.1)
                continue
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in meta.partitions])
            assigned = True
        for msg in consumer.consume(num_messages=1000, timeout=0.1):
            if msg.error() is None and msg.value():
                seen.setdefault(json.loads(msg.value())["after"]["id"], time.time())
    consumer.close()


def watch_log(landing: Path, seen: dict[int, float], stop: threading.Event) -> None:
    """Each change's first sight in a landed log file (a manifest names it)."""
    read: set[str] = set()
    while not stop.is_set():
        for manifest in roll_manifests(landing):
            for name in manifest["files"]:
                if name in read or not name.startswith("public.t/"):
                    continue
                read.add(name)
                now = time.time()
                for i in pq.read_table(landing / "log" / name, columns=["id"]).column("id").to_pylist():
                    seen.setdefault(i, now)
        time.sleep(0.1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--changes", type=int, default=60)
    ap.add_argument("--every", type=float, default=0.5)
    ap.add_argument("--interval", type=float, default=1.0)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-fresh-"))
    pg = EmbeddedPostgres(work / "pg").start()
    engine = sa.create_engine(pg.url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (id bigint PRIMARY KEY, v text)")
    SignalStore(pg.url).init()
    committed: dict[int, float] = {}
    on_topic: dict[int, float] = {}
    in_log: dict[int, float] = {}
    stop = threading.Event()
    with LocalKafka(work / "kafka") as kafka:
        plain = "postgresql://" + pg.url.split("://", 1)[1]
        with LocalConnect(kafka.bootstrap, plain, TOPIC_PREFIX, ["public.t"], schemas=False, engine="native",
                          folder=work / "connect"):  # fmt: skip
            follow = subprocess.Popen(
                [sys.executable, "-m", "cdc_backfill.cli", "capture", "kafka", "--bootstrap-servers",
                 kafka.bootstrap, "--topics", rf"{TOPIC_PREFIX}\..*", "--landing", str(work / "lake"),
                 "--source", plain, "--follow", "--interval", str(args.interval)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )  # fmt: skip
            threads = [
                threading.Thread(target=watch_topic, args=(kafka.bootstrap, f"{TOPIC_PREFIX}.public.t", on_topic, stop)),
                threading.Thread(target=watch_log, args=(work / "lake", in_log, stop)),
            ]  # fmt: skip
            for t in threads:
                t.start()
            time.sleep(20)  # the follow's Spark session up, its first rounds run
            for i in range(args.changes):
                with engine.begin() as conn:
                    conn.execute(sa.text("INSERT INTO t VALUES (:i, 'x')"), {"i": i})
                committed[i] = time.time()
                time.sleep(args.every)
            deadline = time.time() + 120
            while len(in_log) < args.changes and time.time() < deadline:
                time.sleep(0.2)
            stop.set()
            for t in threads:
                t.join()
            follow.send_signal(signal.SIGTERM)
            follow.communicate(timeout=120)
    engine.dispose()
    pg.stop()
    shutil.rmtree(work, ignore_errors=True)
    topic_lag = [on_topic[i] - committed[i] for i in committed if i in on_topic]
    log_lag = [in_log[i] - committed[i] for i in committed if i in in_log]
    missing = args.changes - len(log_lag)
    rows = [
        {"measure": "commit -> topic, p95 s (reference: Connect's delivery)", "items": len(topic_lag),
         "seconds": p95(topic_lag), "rate": 0.0, "reference": f"median {statistics.median(topic_lag):.2f} s"},
        {"measure": "commit -> log (capture kafka --follow), p95 s", "items": len(log_lag),
         "seconds": p95(log_lag), "rate": 0.0,
         "reference": f"median {statistics.median(log_lag):.2f} s; {missing} not landed in 120 s",
         "reference_name": "commit -> topic, p95", "reference_seconds": p95(topic_lag)},
    ]  # fmt: skip
    report("kafka_follow", rows, {"changes": args.changes, "every": args.every, "interval": args.interval})


if __name__ == "__main__":
    main()
