"""``ingest``: files of change events into the typed log, each file once, bad records quarantined,
types from the landing, the source's catalog or a column-type file, and refused by name without."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from cdc_backfill.events.positions import position_of_key
from cdc_backfill.ingest.column_sources import ColumnsError, ColumnSources, read_column_types
from cdc_backfill.ingest.spark import job
from cdc_backfill.ingest.spark.job import ingest_landing
from cdc_backfill.landing.event_log import log_files, read_schema
from cdc_backfill.landing.layout import ingested_stream_dir, rolls_dir, staging_dir, stream_dir
from cdc_backfill.landing.writer import LogWriter
from cdc_backfill.reconcile.spark.job import reconcile_landing
from tests.support.paths import FIXTURES
from tests.support.records import capture_changes
from tests.support.scripts import ENCODERS, every_rule, records, write_chunk, write_stream_file
from tests.support.state import state_frame

pytestmark = pytest.mark.spark

SQLSERVER = "dbo.customers"
TYPES = {SQLSERVER: {"key": ["id"], "columns": {"id": "int", "first_name": "varchar(255)",
                                                 "last_name": "text", "email": "text"}}}  # fmt: skip


def sqlserver_lines() -> list[dict[str, Any] | None]:
    return json.loads((FIXTURES / "debezium_sqlserver_customers.json").read_text())["events"]


def ingest(spark, landing: Path, paths: list[Path] | None = None, given: dict | None = None,
           signal: str = "public.cdc_signal") -> dict[str, Any]:  # type: ignore[no-untyped-def]  # fmt: skip
    return ingest_landing(spark, landing, paths, ColumnSources(landing, signal, None, given))


def log_rows(landing: Path, collection: str) -> list[dict[str, Any]]:
    rows = [r for f in log_files(landing, collection) for r in pq.read_table(f).to_pylist()]
    return sorted(rows, key=lambda r: r["_cdc_position"])


def test_a_file_lands_once_whatever_its_name_and_however_often_it_is_given(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    inbox, landing = tmp_path / "inbox", tmp_path / "landing"
    inbox.mkdir()
    lines = "".join(json.dumps(r) + "\n" for r in sqlserver_lines())
    (inbox / "a.jsonl").write_text(lines)
    (inbox / "copy-of-a.json").write_text(lines)
    given = read_column_types_from(tmp_path, TYPES)
    first = ingest(spark, landing, [inbox, inbox / "a.jsonl"], given)
    assert first["files"] == 1 and first["events"] == 3 and first["quarantined"] == 0
    rows = log_rows(landing, SQLSERVER)
    assert [(r["_cdc_op"], r["id"], r["email"]) for r in rows] == [
        ("c", 1005, "john.doe@example.org"), ("u", 1005, "noreply@example.org"), ("d", 1005, None)
    ]  # fmt: skip
    assert position_of_key(rows[0]["_cdc_position"])[0] > 0 and rows[0]["_cdc_line"] >= 1
    assert read_schema(landing, SQLSERVER).key == ("id",)
    again = ingest(spark, landing, [inbox], given)
    assert again["files"] == 0 and sorted(Path(p).name for p in again["already_ingested"]) == [
        "a.jsonl", "copy-of-a.json"
    ]  # fmt: skip
    assert len(log_rows(landing, SQLSERVER)) == 3
    (manifest,) = rolls_dir(landing).glob("r*.json")
    doc = json.loads(manifest.read_text())
    assert doc["origin"] == "ingest" and len(doc["inputs"]) == 1 and doc["events"] == 3


def read_column_types_from(tmp_path: Path, doc: dict) -> dict:  # type: ignore[type-arg]
    path = tmp_path / "types.json"
    path.write_text(json.dumps(doc))
    return read_column_types(path)


def test_bad_records_are_quarantined_with_file_and_line_and_the_rest_lands(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing = tmp_path / "landing"
    good = [json.dumps(r) for r in sqlserver_lines()]
    path = write_stream_file(landing, "mixed.jsonl", [])
    path.write_text("\n".join([good[0], "{not json", good[1]]) + "\n")
    summary = ingest(spark, landing, None, read_column_types_from(tmp_path, TYPES))
    assert summary["events"] == 2 and summary["quarantined"] == 1
    (bad,) = [
        json.loads(line)
        for f in Path(summary["quarantine"]).glob("*.json")
        for line in f.read_text().splitlines()
    ]
    assert bad["line"] == 2 and bad["file"].endswith("mixed.jsonl") and bad["quarantine_reason"]
    # the landing's own stream file moved out of stream/: the reconcile reads it from the log only
    assert not list(stream_dir(landing).iterdir()) and (ingested_stream_dir(landing) / "mixed.jsonl").exists()


def test_a_collection_nothing_types_is_refused_by_name_and_nothing_lands(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing = tmp_path / "landing"
    write_stream_file(landing, "a.jsonl", sqlserver_lines())
    with pytest.raises(ColumnsError, match=r"no column types for dbo\.customers: give --source URL"):
        ingest(spark, landing)
    assert not rolls_dir(landing).exists() and log_files(landing, SQLSERVER) == []
    assert (stream_dir(landing) / "a.jsonl").exists()  # nothing moved, nothing lost
    assert not staging_dir(landing).exists() or not any(staging_dir(landing).iterdir())


def test_an_unfinished_ingest_is_cleaned_up_and_a_capture_leaves_ingest_files_alone(
    spark, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    landing = tmp_path / "landing"
    write_stream_file(landing, "a.jsonl", sqlserver_lines())
    given = read_column_types_from(tmp_path, TYPES)
    ingest(spark, landing, None, given)
    (named,) = log_files(landing, SQLSERVER)
    orphan = named.with_name(named.name.replace("-i", "-i9"))  # as if its manifest was never written
    orphan.write_bytes(named.read_bytes())
    (staging_dir(landing) / "old" / SQLSERVER).mkdir(parents=True)
    LogWriter(landing, "capture:x")  # a capture starting: removes its own unfinished files only
    assert orphan.exists()
    ingest(spark, landing, None, given)
    assert not orphan.exists() and not (staging_dir(landing) / "old").exists()
    assert len(log_rows(landing, SQLSERVER)) == 3


@pytest.mark.parametrize("fmt", ["debezium-postgresql", "dataworks"])
def test_ingest_then_reconcile_applies_every_rule(spark, tmp_path: Path, fmt: str) -> None:  # type: ignore[no-untyped-def]
    enc = ENCODERS[fmt]
    script = every_rule(enc)
    landing, state = tmp_path / "landing", tmp_path / "state"
    write_stream_file(landing, "1.jsonl", [r for _, r in records(script, enc)])
    for chunk, rows in script.reads.items():
        write_chunk(landing, enc.collection, chunk, rows)
    summary = ingest(spark, landing, signal=enc.signal)
    assert summary["files"] == 1 and summary["moved"] == 1
    assert sorted(summary["collections"]) == sorted([enc.collection, enc.signal])
    info = reconcile_landing(spark, landing, state, [enc.collection], enc.signal)["collections"][
        enc.collection
    ]
    assert info["events_applied"] > 0  # from the log
    rows = state_frame(spark, state, enc.collection).collect()
    assert {r["id"]: {"id": r["id"], "v": r["v"], "big": r["big"]} for r in rows} == script.truth


def test_values_keep_their_types(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing = tmp_path / "landing"
    line = {"before": None, "after": {"id": 1, "amount": "12.50", "at": 1700000000000000},
            "source": {"connector": "postgresql", "schema": "public", "table": "t", "lsn": 100,
                       "sequence": '["90","100"]', "ts_ms": 1}, "op": "c", "ts_ms": 2}  # fmt: skip
    write_stream_file(landing, "a.jsonl", [line])
    types = {
        "public.t": {"key": ["id"], "columns": {"id": "bigint", "amount": "numeric(12,2)", "at": "timestamp"}}
    }
    ingest(spark, landing, None, read_column_types_from(tmp_path, types))
    (row,) = log_rows(landing, "public.t")
    assert row["amount"] == Decimal("12.50") and row["at"].year == 2023 and row["_cdc_ts_ms"] == 1


def test_the_ingest_command_line() -> None:
    from cdc_backfill.spark.submit import ingest_command

    cmd = ingest_command("lake/", ["topics/a"], master="spark://h:7077", catalog=True, column_types="t.json")
    assert cmd[:5] == ["spark-submit", "--master", "spark://h:7077", "--name", "cdc_backfill_ingest"]
    job = cmd.index(next(c for c in cmd if c.endswith("cdc_backfill/jobs/ingest.py")))
    assert cmd[job + 1 :] == ["--landing", "lake/", "topics/a", "--catalog", "--column-types", "t.json"]


def _wrapped(n: int, op: str, row: dict[str, Any] | None, key: int) -> dict[str, Any]:
    """A record of a Kafka sink with the JSON converter's schemas on: semantic types as Debezium writes
    them (days, microseconds, a Decimal as base64 of its unscaled bytes)."""
    fields = [
        {"field": "id", "type": "int32", "optional": False},
        {"field": "day", "type": "int32", "name": "io.debezium.time.Date", "optional": True},
        {"field": "at", "type": "int64", "name": "io.debezium.time.MicroTimestamp", "optional": True},
        {"field": "tm", "type": "int64", "name": "io.debezium.time.MicroTime", "optional": True},
        {"field": "amount", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "optional": True,
         "parameters": {"scale": "2", "connect.decimal.precision": "12"}},
    ]  # fmt: skip
    row_schema = {"type": "struct", "name": "app.public.pay.Value", "optional": True, "fields": fields}
    envelope = {"type": "struct", "name": "app.public.pay.Envelope", "fields": [
        {**row_schema, "field": "before"}, {**row_schema, "field": "after"},
        {"type": "struct", "field": "source", "fields": []}, {"type": "string", "field": "op"},
    ]}  # fmt: skip
    source = {"connector": "postgresql", "schema": "public", "table": "pay", "db": "app", "lsn": n * 64,
              "commit_lsn": n * 64, "ts_ms": 1_700_000_000_000}  # fmt: skip
    value = {"op": op, "before": None if op != "d" else {"id": key}, "after": row, "source": source}
    key_schema = {
        "type": "struct",
        "name": "app.public.pay.Key",
        "fields": [{"field": "id", "type": "int32"}],
    }
    return {
        "key": {"schema": key_schema, "payload": {"id": key}},
        "value": {"schema": envelope, "payload": value},
    }


def test_types_come_from_the_records_schema_wrapper(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import base64
    import datetime as dt

    def amount(cents: int) -> str:
        return base64.b64encode(cents.to_bytes(8, "big", signed=True)).decode()

    rows = [
        _wrapped(1, "c", {"id": 1, "day": 19723, "at": 1704067200000001, "tm": 45296500000, "amount": amount(1230)}, 1),
        _wrapped(2, "c", {"id": 2, "day": None, "at": None, "tm": 0, "amount": amount(-5)}, 2),
        _wrapped(3, "u", {"id": 1, "day": 19724, "at": 1704067200000001, "tm": 45296500000, "amount": amount(99)}, 1),
        _wrapped(4, "d", None, 2),
    ]  # fmt: skip
    inbox, landing = tmp_path / "sink", tmp_path / "landing"
    inbox.mkdir()
    (inbox / "app.public.pay-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = ingest(spark, landing, [inbox])  # no catalog, no column-type file: the wrapper types it
    assert summary["events"] == 4 and summary["quarantined"] == 0
    schema = read_schema(landing, "public.pay")
    assert schema.key == ("id",)
    assert [(c.name, c.type) for c in schema.current.columns] == [
        ("id", "integer"), ("day", "date"), ("at", "timestamp without time zone"),
        ("tm", "time without time zone"), ("amount", "numeric(12,2)"),
    ]  # fmt: skip
    reconcile_landing(spark, landing, tmp_path / "state", ["public.pay"])
    [got] = [r.asDict() for r in state_frame(spark, tmp_path / "state", "public.pay").collect()]
    assert {k: got[k] for k in ("id", "day", "at", "tm", "amount")} == {
        "id": 1, "day": dt.date(2024, 1, 2), "at": dt.datetime(2024, 1, 1, 0, 0, 0, 1),
        "tm": "12:34:56.5", "amount": Decimal("0.99"),
    }  # fmt: skip


TYPED = "public.t"
TYPED_TYPES = {TYPED: {"key": ["id"], "columns": {"id": "bigint", "name": "text", "balance": "numeric(12,2)",
                                                  "active": "boolean", "score": "double precision"}}}  # fmt: skip


def test_events_the_parse_workers_type_land_as_the_jvm_types_them(spark, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for name, n, seed in (("a.jsonl", 300, 1), ("b.jsonl", 600, 2)):
        (inbox / name).write_text("".join(json.dumps(r) + "\n" for r in capture_changes(n, seed)))
    given = read_column_types_from(tmp_path, TYPED_TYPES)
    landed = {}
    # every file's events typed by the JVM; by the workers; b.jsonl's by its worker, a.jsonl's by the JVM
    for way, least in (("jvm", 10**9), ("workers", 1), ("both", 500)):
        monkeypatch.setattr(job, "TYPED_MIN_EVENTS", least)
        landing = tmp_path / way
        summary = ingest(spark, landing, [inbox], given)
        by_workers = {"jvm": 0, "workers": summary["events"], "both": len(capture_changes(600, 2))}[way]
        assert summary["typed_in_parse"] == by_workers
        (manifest,) = rolls_dir(landing).glob("r*.json")
        doc = json.loads(manifest.read_text())
        landed[way] = (log_rows(landing, TYPED), doc["counts"], doc["position"], summary["events"])
        assert not any(staging_dir(landing).iterdir())
    assert landed["workers"] == landed["jvm"] == landed["both"]
    assert len(landed["jvm"][0]) == landed["jvm"][3] > 900
    assert {r["_cdc_op"] for r in landed["jvm"][0]} == {"c", "u", "d"}


def test_events_the_parse_workers_typed_are_refused_with_the_rest(spark, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(job, "TYPED_MIN_EVENTS", 1)
    landing = tmp_path / "landing"
    write_stream_file(landing, "a.jsonl", capture_changes(100, 3))
    lacking = {TYPED: {**TYPED_TYPES[TYPED], "columns": {**TYPED_TYPES[TYPED]["columns"]}}}
    del lacking[TYPED]["columns"]["score"]
    with pytest.raises(ColumnsError, match=r"carry column\(s\) score that its description lacks"):
        ingest(spark, landing, None, read_column_types_from(tmp_path, lacking))
    assert not rolls_dir(landing).exists() and log_files(landing, TYPED) == []
    assert not staging_dir(landing).exists() or not any(staging_dir(landing).iterdir())
    assert (stream_dir(landing) / "a.jsonl").exists()


def test_dataworks_records_that_change_no_row_land_nothing_and_a_truncate_empties(
    spark, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The seed's records with a schema change first (``payload.ddl`` set, no before or after), a
    heartbeat, transaction markers and a GTID between them, and a truncate: no traceback, the truncate
    empties the table at its sequenceId, and the rows after it are the state."""
    seed = json.loads((FIXTURES / "dataworks_kafka_no_pk.json").read_text())["events"]
    insert, table = seed[0], seed[0]["schema"]

    def at(base: dict[str, Any], seq: int, op: str, **payload: Any) -> dict[str, Any]:
        return {**base, "payload": {**base["payload"], "sequenceId": str(seq), "op": op, **payload}}

    def row(seq: int, row_id: int) -> dict[str, Any]:
        after = {"dataColumn": {**insert["payload"]["after"]["dataColumn"], "#alibaba_rds_row_id#": row_id}}
        return at(insert, seq, "INSERT", after=after)

    bare = {
        "schema": {"source": table["source"]},
        "payload": {"before": None, "after": None},
        "version": "0.0.1",
    }
    lines = [
        # as a row's record, its schema whole (the traceback's case), and bare
        at({**insert, "payload": {**insert["payload"], "after": None}}, 1, "ALTER", ddl="ALTER TABLE t ADD c int"),
        at(bare, 1, "CINDEX", ddl="CREATE INDEX i ON pkset_test_no_pk (job)"),
        at(bare, 2, "TRANSACTION_BEGIN"), row(3, 1), row(4, 2), at(bare, 5, "TRANSACTION_END"),
        at(bare, 6, "GTID"), at(bare, 7, "MHEARTBEAT"),
        at({**insert, "payload": {**insert["payload"], "after": None}}, 8, "TRUNCATE"),
        row(9, 3), at(bare, 10, "XACOMMIT"),
    ]  # fmt: skip
    landing, state = tmp_path / "landing", tmp_path / "state"
    write_stream_file(landing, "dataworks.jsonl", lines)
    summary = ingest(spark, landing)
    assert summary["quarantined"] == 0, summary
    # the schema changes with their text, in the summary and the manifest; every marker counted
    assert summary["schema_changes"] == [
        {"schema_change": "ALTER", "collection": "pkset_test.pkset_test_no_pk", "ddl": "ALTER TABLE t ADD c int",
         "sequenceId": "1"},
        {"schema_change": "CINDEX", "collection": "pkset_test.pkset_test_no_pk",
         "ddl": "CREATE INDEX i ON pkset_test_no_pk (job)", "sequenceId": "1"},
    ]  # fmt: skip
    assert summary["markers_skipped"] == 7
    [manifest] = [json.loads(p.read_text()) for p in rolls_dir(landing).glob("r*.json")]
    assert manifest["schema_changes"] == summary["schema_changes"]
    reconcile_landing(spark, landing, state)
    rows = state_frame(spark, state, "pkset_test.pkset_test_no_pk").collect()
    assert [r["#alibaba_rds_row_id#"] for r in rows] == [3]  # 1 and 2 went with the truncate


@pytest.mark.parametrize("one_record", [False, True])
def test_a_dataworks_key_change_leaves_nothing_of_the_old_key(
    spark, tmp_path: Path, one_record: bool
) -> None:  # type: ignore[no-untyped-def]
    """An update that moves a row to a new key, as two records sharing a sequenceId or as one: the old
    key is gone from the state, the new one holds the row."""
    seed = json.loads((FIXTURES / "dataworks_kafka_no_pk.json").read_text())["events"]
    insert = seed[0]
    image = insert["payload"]["after"]
    moved = {"dataColumn": {**image["dataColumn"], "#alibaba_rds_row_id#": 99}}

    def at(seq: int, op: str, before: Any, after: Any) -> dict[str, Any]:
        return {**insert, "payload": {**insert["payload"], "sequenceId": str(seq), "op": op, "before": before,
                                      "after": after}}  # fmt: skip

    change = (
        [at(2, "UPDATE_AFTER", image, moved)]
        if one_record
        else [at(2, "UPDATE_BEFOR", image, None), at(2, "UPDATE_AFTER", None, moved)]
    )
    landing, state = tmp_path / "landing", tmp_path / "state"
    write_stream_file(landing, "dataworks.jsonl", [at(1, "INSERT", None, image), *change])
    ingest(spark, landing)
    reconcile_landing(spark, landing, state)
    rows = state_frame(spark, state, "pkset_test.pkset_test_no_pk").collect()
    assert [(r["#alibaba_rds_row_id#"], r["name"]) for r in rows] == [(99, "name11")]
