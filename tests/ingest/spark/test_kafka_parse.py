"""Kafka records to parsed rows (the worker's side of ``capture kafka``, pure: no Spark session)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from cdc_backfill.events.positions import position_of_key
from cdc_backfill.ingest.spark.capture_kafka import KAFKA_COLUMNS, parse_kafka_batches
from tests.support.records import capture_record

HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def dbz(op: str, key: int, lsn: int, last_commit: int | None) -> dict[str, Any]:
    record = capture_record(op, key, lsn, 0)
    source = record["value"]["source"]
    del source["commit_lsn"]
    source["sequence"] = json.dumps([None if last_commit is None else str(last_commit), str(lsn)])
    return record


def batch(rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    """(topic, partition, offset, key, value, headers) rows as Spark's Kafka source gives them."""
    enc = lambda v: None if v is None else (v if isinstance(v, bytes) else json.dumps(v).encode())  # noqa: E731
    cols = {
        "key": pa.array([enc(r[3]) for r in rows], pa.binary()),
        "value": pa.array([enc(r[4]) for r in rows], pa.binary()),
        "topic": pa.array([r[0] for r in rows], pa.string()),
        "partition": pa.array([r[1] for r in rows], pa.int32()),
        "offset": pa.array([r[2] for r in rows], pa.int64()),
        "headers": pa.array(
            [[{"key": k, "value": v.encode()} for k, v in (r[5] or {}).items()] for r in rows], HEADERS
        ),
    }
    return pa.RecordBatch.from_pydict({c: cols[c] for c in KAFKA_COLUMNS})


def parsed(rows: list[tuple[Any, ...]], after: int = 0) -> list[dict[str, Any]]:
    out = []
    for b in parse_kafka_batches(iter([batch(rows)]), after=after):
        out += b.to_pylist()
    return out


def test_a_key_change_across_partitions_pairs_by_its_headers() -> None:
    old = dbz("d", 3, 500, 480)
    new = dbz("c", 10, 500, 480)
    rows = [
        ("t", 1, 7, new["key"], new["value"], {"__debezium.oldkey": '{"id":3}'}),  # may be read first
        ("t", 0, 4, old["key"], old["value"], {"__debezium.newkey": '{"id":10}'}),
        ("t", 0, 5, old["key"], None, {"__debezium.newkey": '{"id":10}'}),  # its tombstone: nothing
    ]
    events = parsed(rows)
    by_op = {e["op"]: e for e in events}
    assert len(events) == 2
    assert position_of_key(by_op["d"]["position"]) == (480, 500, 0)
    assert position_of_key(by_op["c"]["position"]) == (480, 500, 1)
    assert by_op["c"]["file"] == "kafka:t[1]" and by_op["c"]["line"] == 7


def test_changes_take_their_commit_order_and_a_restart_follows_what_landed() -> None:
    restarted, later = dbz("c", 1, 700, None), dbz("u", 1, 800, 750)  # the first: after a restart
    rows = [
        ("t", 0, 0, restarted["key"], restarted["value"], None),
        ("t", 0, 1, later["key"], later["value"], None),
    ]
    first, second = (position_of_key(e["position"]) for e in parsed(rows, after=690))
    assert first == (691, 700)  # after everything landed before, before what follows it
    assert first < second == (750, 800)


def test_dataworks_values_heartbeats_and_bad_records() -> None:
    dataworks = {
        "schema": {"dataColumn": [{"name": "id", "type": "LONG"}], "primaryKey": ["id"],
                   "source": {"dbType": "MySQL", "dbName": "app", "tableName": "t"}},
        "payload": {"before": None, "after": {"dataColumn": {"id": 5}}, "sequenceId": "42",
                    "timestamp": {"eventTime": 1}, "op": "INSERT", "ddl": None},
        "version": "0.0.1",
    }  # fmt: skip
    rows = [
        ("dw", 0, 0, "5", dataworks, None),  # a DataWorks key is no JSON object: the value says it all
        ("__debezium-heartbeat.app", 0, 3, {"serverName": "app"}, {"ts_ms": 17}, None),
        ("t", 2, 9, {"id": 1}, b"{not json", None),
    ]
    events = parsed(rows)
    row = next(e for e in events if e["collection"] == "app.t")
    assert row["op"] == "c" and position_of_key(row["position"])[0] == 42
    assert any(e["op"] == "h" for e in events)
    bad = [e for e in events if e["quarantine_reason"]]
    assert [(b["file"], b["line"]) for b in bad] == [("kafka:t[2]", 9)]


def test_a_notification_is_kept_whole_for_the_manifest() -> None:
    note = {"id": "sig-1", "type": "TABLE_SCAN_COMPLETED", "aggregate_type": "Incremental Snapshot",
            "additional_data": {"scanned_collection": "public.t", "status": "SUCCEEDED"}, "timestamp": 1}  # fmt: skip
    wrapped = {"schema": {"type": "struct"}, "payload": note}  # the JSON converter with schemas on
    rows = [
        ("app.notifications", 0, 4, {"id": "sig-1"}, note, None),
        ("app.notifications", 0, 5, None, wrapped, None),
    ]
    events = parsed(rows)
    assert [(e["op"], e["collection"], e["line"]) for e in events] == [("h", None, 4), ("h", None, 5)]
    assert all(json.loads(e["record"]) == note and e["quarantine_reason"] is None for e in events)
