"""``cdc-backfill capture kafka`` as users type it, against a real broker: Debezium records read into the
log exactly once, each bad input refused in one line with nothing landed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from cdc_backfill.faults import INGEST_CRASH_ENV
from cdc_backfill.kafka.broker import LocalKafka
from cdc_backfill.landing.manifests import roll_manifests
from tests.support.cli import as_printed, cli, ok
from tests.support.dataworks import record as dataworks_record
from tests.support.dataworks import replay
from tests.support.kafka import produce, start_broker
from tests.support.records import capture_record
from tests.support.runs import reconcile_here
from tests.support.state import state_table

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

TYPES = {"public.t": {"key": ["id"], "columns": {"id": "integer", "name": "text", "balance": "numeric(12,2)",
                                                 "active": "boolean", "score": "double precision"}}}  # fmt: skip


def dbz(op: str, key: int, lsn: int) -> dict[str, Any]:
    """A Debezium PostgreSQL change as Connect writes it with schemas off: ``sequence`` (the last commit's
    LSN, then the change's), no commit LSN, no offsets in the value."""
    record = capture_record(op, key, lsn, 0)
    source = record["value"]["source"]
    del source["commit_lsn"]
    source["sequence"] = json.dumps([str(lsn - 1), str(lsn)])
    return record


def capture(
    tmp: Path, bootstrap: str, topics: str, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    (tmp / "types.json").write_text(json.dumps(TYPES))
    args = ["capture", "kafka", "--bootstrap-servers", bootstrap, "--topics", topics, "--landing", "lake",
            "--column-types", "types.json", "--drain", *extra]  # fmt: skip
    if env is None:
        return cli(tmp, *args)
    return subprocess.run([sys.executable, "-m", "cdc_backfill.cli", *args], cwd=tmp, capture_output=True,
                          text=True, timeout=600, env={**os.environ, **env})  # fmt: skip


def landed_ids(landing: Path) -> list[tuple[int, str]]:
    """(id, op) of every event the manifests name, in no particular order."""
    out = []
    for manifest in roll_manifests(landing):
        for name in manifest["files"]:
            table = pq.read_table(landing / "log" / name, columns=["id", "_cdc_op"])
            out += list(zip(table.column("id").to_pylist(), table.column("_cdc_op").to_pylist(), strict=True))
    return out


def test_records_land_once_and_the_next_run_starts_where_the_last_ended(
    kafka_broker: LocalKafka, tmp_path: Path
) -> None:
    topic = "once.public.t"
    produce(kafka_broker.bootstrap, topic, [dbz("c", k, 100 + k) for k in range(1, 31)])
    first = json.loads(ok(capture(tmp_path, kafka_broker.bootstrap, r"once\..*")))
    assert first["events"] == 30 and first["topics"] == [topic]
    again = json.loads(ok(capture(tmp_path, kafka_broker.bootstrap, r"once\..*")))
    assert again["events"] == 0 and again["records"] == 0
    produce(
        kafka_broker.bootstrap,
        topic,
        [dbz("u", k, 200 + k) for k in range(1, 11)] + [{"key": {"id": 3}, "value": None}],
    )
    third = json.loads(ok(capture(tmp_path, kafka_broker.bootstrap, r"once\..*")))
    assert third["events"] == 10 and third["records"] == 11  # the tombstone is read, and lands nothing
    ids = landed_ids(tmp_path / "lake")
    assert sorted(ids) == sorted([(k, "c") for k in range(1, 31)] + [(k, "u") for k in range(1, 11)])
    ranges = [r for m in roll_manifests(tmp_path / "lake") for r in m.get("kafka", [])]
    assert sum(r["to"] - r["from"] for r in ranges) == 41  # every offset read once, in one manifest


def test_a_kill_before_the_manifest_lands_nothing_and_the_rerun_lands_once(
    kafka_broker: LocalKafka, tmp_path: Path
) -> None:
    produce(kafka_broker.bootstrap, "kill.public.t", [dbz("c", k, 100 + k) for k in range(1, 21)])
    crashed = capture(
        tmp_path, kafka_broker.bootstrap, r"kill\..*", env={INGEST_CRASH_ENV: "before-manifest"}
    )
    assert crashed.returncode != 0
    assert landed_ids(tmp_path / "lake") == []  # the files it wrote count for nothing
    ok(capture(tmp_path, kafka_broker.bootstrap, r"kill\..*"))
    assert sorted(landed_ids(tmp_path / "lake")) == [(k, "c") for k in range(1, 21)]


def test_a_kill_after_the_manifest_reads_nothing_twice(kafka_broker: LocalKafka, tmp_path: Path) -> None:
    produce(kafka_broker.bootstrap, "killed.public.t", [dbz("c", k, 100 + k) for k in range(1, 21)])
    crashed = capture(
        tmp_path, kafka_broker.bootstrap, r"killed\..*", env={INGEST_CRASH_ENV: "after-manifest"}
    )
    assert crashed.returncode != 0
    again = json.loads(ok(capture(tmp_path, kafka_broker.bootstrap, r"killed\..*")))
    assert again["events"] == 0
    assert sorted(landed_ids(tmp_path / "lake")) == [(k, "c") for k in range(1, 21)]


def test_a_record_that_does_not_parse_is_named_and_nothing_lands(
    kafka_broker: LocalKafka, tmp_path: Path
) -> None:
    produce(
        kafka_broker.bootstrap,
        "bad.public.t",
        [dbz("c", 1, 101), {"key": {"id": 2}, "value": b"{not json"}],
        partitions=1,
    )
    res = capture(tmp_path, kafka_broker.bootstrap, r"bad\..*")
    assert res.returncode == 2
    last = res.stderr.strip().splitlines()[-1]
    assert "kafka:bad.public.t[0] offset 1" in last and "nothing landed" in last, res.stderr
    assert "Traceback" not in res.stderr and "py4j" not in res.stderr.lower()
    assert roll_manifests(tmp_path / "lake") == []


def test_a_topic_of_another_format_is_refused(kafka_broker: LocalKafka, tmp_path: Path) -> None:
    produce(
        kafka_broker.bootstrap,
        "orders-json",
        [{"key": None, "value": {"order": 1, "amount": 5}}],
        partitions=1,
    )
    res = capture(tmp_path, kafka_broker.bootstrap, "orders-json")
    assert res.returncode == 2
    assert "kafka:orders-json[0] offset 0" in res.stderr.strip().splitlines()[-1], res.stderr
    assert roll_manifests(tmp_path / "lake") == []


def test_no_matching_topic_and_a_broker_that_is_down_are_one_line_each(
    kafka_broker: LocalKafka, tmp_path: Path
) -> None:
    res = capture(tmp_path, kafka_broker.bootstrap, r"nothing\.like\.this")
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "no topic at" in res.stderr and "matches --topics" in res.stderr
    started = time.monotonic()
    res = capture(tmp_path, "127.0.0.1:1", r".*")
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "cannot reach the Kafka broker at 127.0.0.1:1" in res.stderr
    assert (
        time.monotonic() - started < 120
    )  # refused before any Spark starts (no timing asserted beyond that)
    assert not (tmp_path / "lake" / "log").exists()


def test_offsets_retention_deleted_are_refused_then_skipped_when_told(
    kafka_broker: LocalKafka, tmp_path: Path
) -> None:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = "gone.public.t"
    produce(kafka_broker.bootstrap, topic, [dbz("c", k, 100 + k) for k in range(1, 6)], partitions=1)
    ok(capture(tmp_path, kafka_broker.bootstrap, r"gone\..*"))
    produce(kafka_broker.bootstrap, topic, [dbz("c", k, 100 + k) for k in range(6, 16)], partitions=1)
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, 10)]).values():  # as retention does
        future.result(timeout=30)
    res = capture(tmp_path, kafka_broker.bootstrap, r"gone\..*")
    assert res.returncode == 2, res.stderr
    line = res.stderr.strip().splitlines()[-1]
    assert "gone.public.t[0]: offsets 5 to 9 were deleted before they landed" in line
    assert "--skip-lost-offsets" in line
    told = json.loads(ok(capture(tmp_path, kafka_broker.bootstrap, r"gone\..*", "--skip-lost-offsets")))
    assert told["events"] == 5 and told["skipped_lost_offsets"] == [
        {"topic": topic, "partition": 0, "from": 5, "to": 10}
    ]
    assert sorted(k for k, _ in landed_ids(tmp_path / "lake")) == [*range(1, 6), *range(11, 16)]


def test_follow_lands_as_records_arrive_and_stops_on_sigterm(
    kafka_broker: LocalKafka, tmp_path: Path
) -> None:
    topic = "follow.public.t"
    produce(kafka_broker.bootstrap, topic, [dbz("c", 1, 101)])
    (tmp_path / "types.json").write_text(json.dumps(TYPES))
    proc = subprocess.Popen(
        [sys.executable, "-m", "cdc_backfill.cli", "capture", "kafka", "--bootstrap-servers", kafka_broker.bootstrap,
         "--topics", r"follow\..*", "--landing", "lake", "--column-types", "types.json", "--follow", "--interval", "0.5"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while len(landed_ids(tmp_path / "lake")) < 1 and time.monotonic() < deadline:
            time.sleep(0.5)
        produce(kafka_broker.bootstrap, topic, [dbz("c", k, 100 + k) for k in range(2, 6)])
        while len(landed_ids(tmp_path / "lake")) < 5 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert sorted(k for k, _ in landed_ids(tmp_path / "lake")) == [1, 2, 3, 4, 5]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]
    assert json.loads(out.strip().splitlines()[-1])["events"] == 5


def test_follow_goes_on_through_a_broker_restart_and_lands_each_record_once(tmp_path: Path) -> None:
    broker = start_broker(tmp_path / "broker")  # the test's own: it is killed
    try:
        topic = "restart.public.t"
        produce(broker.bootstrap, topic, [dbz("c", k, 100 + k) for k in range(1, 11)])
        (tmp_path / "types.json").write_text(json.dumps(TYPES))
        proc = subprocess.Popen(
            [sys.executable, "-m", "cdc_backfill.cli", "capture", "kafka", "--bootstrap-servers", broker.bootstrap,
             "--topics", r"restart\..*", "--landing", "lake", "--column-types", "types.json", "--follow",
             "--interval", "0.5"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 300
            while len(landed_ids(tmp_path / "lake")) < 10 and time.monotonic() < deadline:
                time.sleep(0.5)
            broker.kill()  # kill -9, mid-run: rounds fail while it is down
            time.sleep(5)
            broker.start()
            produce(broker.bootstrap, topic, [dbz("u", k, 200 + k) for k in range(1, 11)])
            while len(landed_ids(tmp_path / "lake")) < 20 and time.monotonic() < deadline:
                time.sleep(0.5)
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-3000:]
        assert json.loads(out.strip().splitlines()[-1])["events"] == 20
        assert sorted(landed_ids(tmp_path / "lake")) == sorted(
            [(k, "c") for k in range(1, 11)] + [(k, "u") for k in range(1, 11)]
        )
    finally:
        broker.close()


def dataworks(
    op: str, seq: int, before: dict[str, Any] | None, after: dict[str, Any] | None
) -> dict[str, Any]:
    """A record of DataWorks' whole-database sync to Kafka for ``shop.items`` (its documented format)."""
    columns = [
        {"name": "id", "type": "LONG"},
        {"name": "name", "type": "STRING"},
        {"name": "price", "type": "DOUBLE"},
    ]
    return {
        "schema": {"dataColumn": columns, "primaryKey": ["id"],
                   "source": {"dbType": "MySQL", "dbName": "shop", "tableName": "items"}},
        "payload": {"before": before and {"dataColumn": before}, "after": after and {"dataColumn": after},
                    "sequenceId": str(seq), "timestamp": {"eventTime": 1700000000000 + seq,
                    "systemTime": 1700000000000 + seq, "checkpointTime": 1700000000000 + seq},
                    "op": op, "ddl": None},
        "version": "0.0.1",
    }  # fmt: skip


def test_a_dataworks_topic_reconciles_to_the_truth(spark, kafka_broker: LocalKafka, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    row = lambda i, price: {"id": i, "name": f"item {i}", "price": price}  # noqa: E731
    records, seq = [], 1_620_457_642_589_000_000  # sequenceIds beyond 2**60, as the format's are
    for i in range(1, 21):
        seq += 1
        records.append(dataworks("INSERT", seq, None, row(i, 1.0)))
    for i in range(1, 11):  # an update as its two halves under one sequenceId
        seq += 1
        records.append(dataworks("UPDATE_BEFOR", seq, row(i, 1.0), None))
        records.append(dataworks("UPDATE_AFTER", seq, None, row(i, 2.5)))
    for i in range(15, 21):
        seq += 1
        records.append(dataworks("DELETE", seq, row(i, 1.0), None))
    records.append({"schema": {"dataColumn": [], "primaryKey": None, "source": {"dbType": "MySQL", "dbName": "shop",
                    "tableName": "items"}}, "payload": {"before": None, "after": None, "sequenceId": str(seq + 1),
                    "timestamp": {"eventTime": 1}, "op": "MHEARTBEAT", "ddl": None}, "version": "0.0.1"})  # fmt: skip
    produce(kafka_broker.bootstrap, "dw-shop", [{"key": None, "value": r} for r in records], partitions=1)
    landed = json.loads(ok(cli(tmp_path, "capture", "kafka", "--bootstrap-servers", kafka_broker.bootstrap,
                                "--topics", "dw-shop", "--landing", "lake", "--drain")))  # fmt: skip
    assert landed["events"] == 20 + 2 * 10 + 6  # an update lands as its two halves (design §5)
    reconcile_here(spark, tmp_path / "lake", tmp_path / "state")
    state = state_table(tmp_path / "state", "shop.items").to_pylist()
    got = {r["id"]: (r["name"], r["price"]) for r in state}
    assert got == {i: (f"item {i}", 2.5 if i <= 10 else 1.0) for i in range(1, 15)}


def test_dataworks_records_out_of_order_across_partitions_and_rounds_reconcile_by_sequence_id(
    spark, kafka_broker: LocalKafka, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The full load meets the changes on a 4-partition topic keyed by row: the first round holds later
    changes (a delete, a key move's after-half), the second the full-load inserts before them and the
    move's before-half. After each round the state is the replay in sequenceId order."""
    row = lambda k, seq: {"id": k, "v": f"v{seq}"}  # noqa: E731
    first = [
        dataworks_record("d.orders", 30, "DELETE", before=row(1, 10)),
        dataworks_record("d.orders", 31, "UPDATE_AFTER", after=row(7, 31)),  # 2 moves to 7
        dataworks_record("d.orders", 32, "INSERT", after=row(4, 32)),
    ]
    second = [
        dataworks_record("d.orders", 10, "INSERT", after=row(1, 10)),
        dataworks_record("d.orders", 11, "INSERT", after=row(2, 11)),
        dataworks_record("d.orders", 12, "INSERT", after=row(3, 12)),
        dataworks_record("d.orders", 31, "UPDATE_BEFOR", before=row(2, 11)),
    ]
    delivered: list[dict[str, Any]] = []
    for batch in (first, second):
        delivered += batch
        keyed = [{"key": {"id": (r["payload"]["after"] or r["payload"]["before"])["dataColumn"]["id"]}, "value": r}
                 for r in batch]  # fmt: skip
        produce(kafka_broker.bootstrap, "dw-orders", keyed, partitions=4)
        ok(cli(tmp_path, "capture", "kafka", "--bootstrap-servers", kafka_broker.bootstrap,
               "--topics", "dw-orders", "--landing", "lake", "--drain"))  # fmt: skip
        reconcile_here(spark, tmp_path / "lake", tmp_path / "state")
        state = state_table(tmp_path / "state", "d.orders").to_pylist()
        assert {r["id"]: r["v"] for r in state} == replay(delivered)["d.orders"]
    assert replay(delivered)["d.orders"] == {3: "v12", 4: "v32", 7: "v31"}


def test_the_printed_command_runs_as_printed_and_prints_no_secret(
    kafka_broker: LocalKafka, tmp_path: Path
) -> None:
    produce(kafka_broker.bootstrap, "printed.public.t", [dbz("c", 1, 101)], partitions=1)
    (tmp_path / "types.json").write_text(json.dumps(TYPES))
    args = ["capture", "kafka", "--bootstrap-servers", kafka_broker.bootstrap, "--topics", r"printed\..*",
            "--landing", "lake", "--column-types", "types.json", "--drain", "--print-command",
            "--property", "client.id=s3cret-client"]  # fmt: skip
    res = cli(tmp_path, *args)
    assert res.returncode == 0 and "s3cret" not in res.stdout + res.stderr
    assert "CDC_BACKFILL_KAFKA_PROPERTIES" in res.stderr and not (tmp_path / "lake").exists()
    ran = as_printed(tmp_path, res.stdout.strip())
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert json.loads(ran.stdout.strip().splitlines()[-1])["events"] == 1
