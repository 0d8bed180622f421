"""Every vendor-documented fixture parses to the events its ``about`` text describes, field by field."""

from __future__ import annotations

import base64
import datetime as dt
import filecmp
import json
from decimal import Decimal
from pathlib import Path

import pytest

from cdc_backfill.events import ParseOptions, parse_file, parse_record
from cdc_backfill.events.model import ChangeEvent, ParseError
from tests.support.paths import FIXTURES

SHARED = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "events"


def events_of(name: str, **opts: object) -> list[ChangeEvent]:
    result = parse_file(str(FIXTURES / name), ParseOptions(**opts))  # type: ignore[arg-type]
    assert result.quarantined == []
    return result.events


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared is not beside this checkout")
def test_fixture_copies_match_the_shared_ones() -> None:
    names = sorted(p.name for p in SHARED.glob("*.json"))
    assert names == sorted(p.name for p in FIXTURES.glob("*.json"))
    _, mismatch, errors = filecmp.cmpfiles(SHARED, FIXTURES, names, shallow=False)
    assert mismatch == errors == []


def test_debezium_postgres() -> None:
    result = parse_file(str(FIXTURES / "debezium_postgres_customers.json"))
    assert result.records == 6
    assert result.skipped == 1  # the tombstone
    create, update, delete, truncate, message = result.events
    row = {"id": 1, "first_name": "Anne", "last_name": "Kretchmar", "email": "annek@noanswer.org"}

    assert (create.collection, create.op, create.key, create.before, create.after) == (
        "public.customers", "c", {"id": 1}, None, row,
    )  # fmt: skip
    assert create.position == (24023119, 24023128)  # (sequence[0], lsn)
    assert create.snapshot == "true"
    assert create.source_ts_ms == 1559033904863

    assert (update.op, update.key, update.before) == ("u", {"id": 1}, {"id": 1})  # REPLICA IDENTITY DEFAULT
    assert update.after == {**row, "first_name": "Anne Marie"}
    assert update.position == (24023128, 24023128)  # no sequence: its own lsn

    assert (delete.op, delete.key, delete.before, delete.after) == ("d", {"id": 1}, {"id": 1}, None)
    assert delete.position == (46523128, 46523128, 0)  # a delete: element 0, as a key change's delete

    assert (truncate.collection, truncate.op, truncate.key) == ("public.customers", "t", None)
    assert (message.op, message.collection, message.key) == ("m", None, None)
    assert message.message == {"prefix": "foo", "content": "Ymfy"}
    assert not message.is_row


def test_debezium_postgres_with_schema_wrapper_is_the_same_event() -> None:
    [wrapped] = events_of("debezium_postgres_customers_with_schema.json")
    plain = events_of("debezium_postgres_customers.json")[0]
    assert wrapped == plain


def test_debezium_sqlserver() -> None:
    create, update, delete = events_of("debezium_sqlserver_customers.json")
    assert create.collection == "dbo.customers"
    assert (create.op, create.key, create.after["email"]) == ("c", {"id": 1005}, "john.doe@example.org")
    assert create.position == (0x00000027_00000758_0005, 0x00000027_00000758_0003, 1)
    assert (update.op, update.before["email"], update.after["email"]) == (
        "u", "john.doe@example.org", "noreply@example.org",
    )  # fmt: skip
    assert update.position == (0x00000027_00000AC0_0007, 0x00000027_00000AC0_0002, 2)
    assert (delete.op, delete.after, delete.before["email"]) == ("d", None, "noreply@example.org")
    assert delete.position == (0x00000027_00000DB0_0007, 0x00000027_00000DB0_0005, 1)
    assert create.position < update.position < delete.position


def test_debezium_oracle_needs_the_collection_for_unnamed_sources() -> None:
    result = parse_file(str(FIXTURES / "debezium_oracle_customers.json"))
    # The documented create/update/delete name no table: without a collection for the file they are
    # quarantined with that reason, not guessed.
    assert [q.reason.split(":")[0] for q in result.quarantined] == ["no collection"] * 3
    create, update, delete, truncate = events_of(
        "debezium_oracle_customers.json", collection="INVENTORY.CUSTOMERS"
    )
    assert create.collection == "INVENTORY.CUSTOMERS"
    assert (create.op, create.key, create.after["FIRST_NAME"]) == ("c", {"ID": 1004}, "Anne")
    assert create.position == (2122185, 2122185)
    assert (update.op, update.after["EMAIL"]) == ("u", "anne@example.com")
    assert update.position == (2125544, 2125544)
    assert (delete.op, delete.before["EMAIL"], delete.after) == ("d", "anne@example.com", None)
    # the documented values are illustrative: the delete's SCN is smaller, and position says so
    assert delete.position == (2122184, 2122184) < create.position
    # the truncate names its own table; ordered by (commit_scn, scn)
    assert (truncate.collection, truncate.op, truncate.key) == ("DEBEZIUM.TEST_TABLE", "t", None)
    assert truncate.position == (13271102, 13234397)


def test_debezium_incremental_snapshot_read() -> None:
    [read] = events_of("debezium_incremental_snapshot_read.json", collection="schema1.table1")
    assert (read.collection, read.op, read.snapshot) == ("schema1.table1", "r", "incremental")
    assert read.key == {"pk": "1"}
    assert read.after == {"pk": "1", "value": "New data"}
    assert read.before is None
    assert read.position == ()  # no position in the record: ordered by its delivery offset, when known
    assert read.source_ts_ms == 1620393591654
    record = json.loads((FIXTURES / "debezium_incremental_snapshot_read.json").read_text())["events"][0]
    [with_offset] = parse_record(
        {**record, "partition": 0, "offset": 42}, ParseOptions(collection="schema1.table1")
    )
    assert with_offset.position == (0, 42)


def test_dataworks_without_primary_key() -> None:
    insert, before_half, after_half, one_record, delete, heartbeat = events_of("dataworks_kafka_no_pk.json")
    key = {"#alibaba_rds_row_id#": 15}
    seq = 1620457642589000000
    assert insert.collection == "pkset_test.pkset_test_no_pk"
    assert (insert.op, insert.key, insert.after["sex"], insert.position) == ("c", key, "man", (seq, 1))
    # UPDATE_BEFOR then UPDATE_AFTER, one sequenceId: the before-half sorts first and removes the key,
    # the after-half writes it back.
    assert (before_half.op, before_half.key, before_half.after, before_half.before["sex"]) == (
        "d",
        key,
        None,
        "man",
    )
    assert (after_half.op, after_half.key, after_half.after["sex"]) == ("u", key, "woman")
    assert before_half.position == (seq + 1, 0) < after_half.position == (seq + 1, 1)
    # the same update as one record: one event, same position as the after-half
    assert (one_record.op, one_record.before["sex"], one_record.after["sex"]) == ("u", "man", "woman")
    assert one_record.position == (seq + 1, 1)
    assert (delete.op, delete.key, delete.after, delete.position) == ("d", key, None, (seq + 2, 1))
    assert (heartbeat.op, heartbeat.collection, heartbeat.position) == ("h", None, ())
    assert heartbeat.source_ts_ms == 1620457659000


def _dataworks(
    op: str, columns: list[dict[str, str]], before: dict | None, after: dict | None, pk=None
) -> dict:
    wrap = lambda row: None if row is None else {"dataColumn": row}  # noqa: E731
    return {
        "schema": {
            "dataColumn": columns,
            "primaryKey": pk,
            "source": {"dbType": "MySQL", "dbName": "d", "tableName": "t"},
        },
        "payload": {
            "before": wrap(before),
            "after": wrap(after),
            "sequenceId": "7",
            "op": op,
            "timestamp": {},
        },
        "version": "0.0.1",
    }


def test_dataworks_types_are_decoded() -> None:
    columns = [
        {"name": "id", "type": "LONG"},
        {"name": "ok", "type": "BOOLEAN"},
        {"name": "x", "type": "DOUBLE"},
        {"name": "day", "type": "DATE"},
        {"name": "blob", "type": "BYTES"},
        {"name": "s", "type": "STRING"},
    ]
    row = {"id": "12", "ok": "true", "x": 1.5, "day": 1620457896000, "blob": "AAEC/w==", "s": "a"}
    [ev] = parse_record(_dataworks("INSERT", columns, None, row, pk=["id"]))
    assert ev.key == {"id": 12}
    assert ev.after == {
        "id": 12,
        "ok": True,
        "x": 1.5,
        "day": dt.datetime(2021, 5, 8, 7, 11, 36, tzinfo=dt.UTC),
        "blob": b"\x00\x01\x02\xff",
        "s": "a",
    }


def test_a_dataworks_table_without_a_primary_key_is_keyed_by_its_row_id() -> None:
    oracle = [{"name": "NAME", "type": "STRING"}, {"name": "ROWID", "type": "STRING"}]
    [ev] = parse_record(_dataworks("INSERT", oracle, None, {"NAME": "a", "ROWID": "AAAR3sAAEAAAACXAAA"}))
    assert ev.key == {"ROWID": "AAAR3sAAEAAAACXAAA"}
    with pytest.raises(ParseError, match="no primary key and no hidden row id column"):
        parse_record(_dataworks("INSERT", oracle[:1], None, {"NAME": "a"}))


def test_dataworks_key_change_is_a_delete_then_a_write() -> None:
    columns = [{"name": "id", "type": "LONG"}, {"name": "v", "type": "STRING"}]
    old, new = parse_record(
        _dataworks("UPDATE_AFTER", columns, {"id": 1, "v": "a"}, {"id": 2, "v": "a"}, pk="id")
    )
    assert (old.op, old.key, old.after, old.position) == ("d", {"id": 1}, None, (7, 0))
    assert (new.key, new.after, new.position) == ({"id": 2}, {"id": 2, "v": "a"}, (7, 1))


def _decimal_b64(unscaled: int) -> str:
    size = (unscaled.bit_length() + 8) // 8
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


def test_debezium_semantic_types_under_the_schema_wrapper() -> None:
    fields = [
        {"type": "int32", "field": "id"},
        {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "2"},
            "field": "price",
        },
        {"type": "int32", "name": "io.debezium.time.Date", "field": "day"},
        {"type": "int64", "name": "io.debezium.time.MicroTimestamp", "field": "at"},
        {"type": "int64", "name": "io.debezium.time.MicroTime", "field": "t"},
        {"type": "string", "name": "io.debezium.time.ZonedTimestamp", "field": "z"},
        {"type": "int64", "name": "io.debezium.time.Timestamp", "field": "ms"},
        {"type": "bytes", "field": "raw"},
        {"type": "double", "name": "org.apache.kafka.connect.data.Decimal", "field": "as_double"},
    ]
    value = {
        "schema": {"type": "struct", "fields": [
            {"type": "struct", "fields": fields, "field": "before", "optional": True},
            {"type": "struct", "fields": fields, "field": "after", "optional": True},
            {"type": "struct", "field": "source", "fields": []},
        ]},
        "payload": {
            "before": None,
            "after": {
                "id": 1,
                "price": _decimal_b64(-12345),
                "day": 19000,
                "at": 1_700_000_000_123_456,
                "t": 3_723_000_001,
                "z": "2024-01-02T03:04:05.123456+02:00",
                "ms": 1_700_000_000_123,
                "raw": "3q2+7w==",
                "as_double": 3.25,
            },
            "source": {"connector": "postgresql", "schema": "public", "table": "p", "lsn": 10, "sequence": '["5","10"]'},
            "op": "c",
        },
    }  # fmt: skip
    key = {"schema": {"type": "struct", "fields": [{"type": "int32", "field": "id"}]}, "payload": {"id": 1}}
    [ev] = parse_record({"key": key, "value": value})
    assert ev.after == {
        "id": 1,
        "price": Decimal("-123.45"),
        "day": dt.date(2022, 1, 8),
        "at": dt.datetime(2023, 11, 14, 22, 13, 20, 123456),
        "t": dt.time(1, 2, 3, 1),
        "z": dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        "ms": dt.datetime(2023, 11, 14, 22, 13, 20, 123000),
        "raw": bytes.fromhex("deadbeef"),
        "as_double": 3.25,
    }
    out = ev.to_dict()["after"]
    assert out["price"] == "-123.45"  # exact, never a float
    assert out["raw"] == "3q2+7w=="


def test_toast_placeholder_is_marked_unchanged_not_a_value() -> None:
    value = {
        "before": None,
        "after": {
            "id": 3,
            "doc": "__debezium_unavailable_value",
            "tags": ["__debezium_unavailable_value"],
            "n": 1,
        },
        "source": {
            "connector": "postgresql",
            "schema": "public",
            "table": "docs",
            "lsn": 99,
            "sequence": '["90","99"]',
        },
        "op": "u",
    }
    [ev] = parse_record({"key": {"id": 3}, "value": value})
    assert ev.after == {"id": 3, "n": 1}
    assert ev.unchanged == ("doc", "tags")


def test_project_capture_is_ordered_by_commit_lsn_then_lsn() -> None:
    value = {
        "before": None,
        "after": {"id": 1},
        "source": {
            "connector": "postgresql",
            "schema": "public",
            "table": "t",
            "lsn": "0/16B3748",
            "commit_lsn": "0/16B37C0",
        },
        "op": "c",
    }
    [ev] = parse_record({"key": {"id": 1}, "value": value})
    assert ev.position == (0x16B37C0, 0x16B3748)


def test_value_only_records_take_their_key_from_the_collection_key_columns() -> None:
    value = {"before": None, "after": {"a": 1, "b": "x", "v": 2}, "op": "c",
             "source": {"connector": "postgresql", "schema": "s", "table": "t", "lsn": 5, "sequence": '[null,"5"]'}}  # fmt: skip
    [ev] = parse_record(value, ParseOptions(key_columns={"s.t": ["b", "a"]}))
    assert ev.key == {"b": "x", "a": 1}
    assert ev.position == (0, 5)


def test_transaction_metadata_is_tolerated() -> None:
    assert parse_record({"status": "BEGIN", "id": "571:53195829", "event_count": None})[0].op == "h"
    value = {"before": None, "after": {"id": 1}, "op": "c",
             "source": {"connector": "sqlserver", "schema": "dbo", "table": "t", "commit_lsn": "00000001:00000002:0003"},
             "transaction": {"id": "x", "total_order": 1, "data_collection_order": 1}}  # fmt: skip
    [ev] = parse_record({"key": {"id": 1}, "value": value})
    assert ev.position == (0x00000001_00000002_0003, 0, 0)
