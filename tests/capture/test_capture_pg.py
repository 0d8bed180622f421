"""Capture against a real PostgreSQL: every change kind lands and parses back into the expected events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from cdc_backfill.capture.postgres import CaptureError, PostgresCapture, capture_status
from cdc_backfill.events.model import ChangeEvent
from tests.support.capture import landed_events, run_capture
from tests.support.pg import sql

pytestmark = pytest.mark.pg


def of(events: list[ChangeEvent], collection: str) -> list[ChangeEvent]:
    return [e for e in events if e.collection == collection]


def test_every_change_kind_is_captured_and_parsed_back(fresh_db: str, tmp_path: Path) -> None:
    sql(
        fresh_db,
        "CREATE TABLE t (id int PRIMARY KEY, n numeric(20,5), ts timestamp, tz timestamptz, d date, b bytea,"
        " arr int[], tags text[], j jsonb, ok bool, doc text)",
        "CREATE TABLE f (id int PRIMARY KEY, v text)",
        "ALTER TABLE f REPLICA IDENTITY FULL",
    )
    landing = tmp_path / "landing"
    PostgresCapture(fresh_db, landing).run()  # publication and slot; nothing to land yet
    # a large value that compression cannot shrink below the TOAST threshold
    big = "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, 300) i)"
    sql(
        fresh_db,
        "INSERT INTO t VALUES (1, 12345.67891, '2024-01-02 03:04:05.123456', '2024-01-02 03:04:05+02', '2024-01-02',"
        f" '\\x0102ff', '{{1,2,NULL}}', '{{\"a b\",c}}', '{{\"k\": [1, 2.5]}}', true, {big})",
        "UPDATE t SET ok = false WHERE id = 1",  # doc unchanged and TOASTed: not sent
        "UPDATE t SET id = 2 WHERE id = 1",  # a key change
        "SELECT pg_logical_emit_message(true, 'app', 'hello')",
        "INSERT INTO f VALUES (1, 'a')",
        "UPDATE f SET v = 'b' WHERE id = 1",
        "DELETE FROM f WHERE id = 1",
        "ALTER TABLE f ADD COLUMN extra int DEFAULT 7",
        "INSERT INTO f VALUES (2, 'c')",
    )
    sql(fresh_db, "DELETE FROM t WHERE id = 2", "TRUNCATE t")
    assert run_capture(fresh_db, landing).returncode == 0
    events = landed_events(landing)

    t = of(events, "public.t")
    assert [e.op for e in t] == ["c", "u", "d", "c", "d", "t"]
    create = t[0]
    assert create.key == {"id": 1}
    assert {k: create.after[k] for k in ("n", "ts", "tz", "d", "b", "arr", "tags", "j", "ok")} == {
        "n": "12345.67891",  # exact
        "ts": 1704164645123456,  # MicroTimestamp
        "tz": "2024-01-02T01:04:05Z",  # ZonedTimestamp, UTC
        "d": 19724,  # days since the epoch
        "b": "AQL/",  # bytea as base64
        "arr": [1, 2, None],
        "tags": ["a b", "c"],
        "j": '{"k": [1, 2.5]}',
        "ok": True,
    }
    assert len(create.after["doc"]) == 9600
    update = t[1]
    assert update.unchanged == ("doc",)  # TOAST: marked unchanged, not a value
    assert "doc" not in update.after
    assert update.before == {"id": 1}  # REPLICA IDENTITY DEFAULT
    assert (t[2].op, t[2].key, t[3].op, t[3].key) == ("d", {"id": 1}, "c", {"id": 2})  # key change
    assert t[4].before == {"id": 2}
    assert t[5].key is None
    # positions follow commit order, and each change of a transaction has its own LSN
    assert [e.position for e in t] == sorted(e.position for e in t)
    assert t[0].position[0] == t[1].position[0]
    assert t[0].position[1] < t[1].position[1]

    f = of(events, "public.f")
    assert [e.op for e in f] == ["c", "u", "d", "c"]
    assert f[1].before == {"id": 1, "v": "a"}  # REPLICA IDENTITY FULL: the whole old row
    assert f[2].before == {"id": 1, "v": "b"}
    assert f[3].after == {"id": 2, "v": "c", "extra": 7}  # the relation changed its columns
    schema = json.loads((landing / "_schemas" / "public.f.json").read_text())
    assert [c["name"] for c in schema["columns"]] == ["id", "v", "extra"]
    assert schema["key"] == ["id"]

    [message] = [e for e in events if e.op == "m"]
    assert message.message == {"prefix": "app", "content": "aGVsbG8="}


def test_signal_row_lands_at_its_commit_position(fresh_db: str, tmp_path: Path) -> None:
    sql(fresh_db, "CREATE TABLE a (id int PRIMARY KEY)")
    landing = tmp_path / "landing"
    PostgresCapture(fresh_db, landing).run()
    engine = sa.create_engine(fresh_db)
    t1, t2 = engine.connect(), engine.connect()
    t1.begin()
    t2.begin()
    t1.execute(sa.text("INSERT INTO a VALUES (1)"))  # first written ...
    t2.execute(sa.text("INSERT INTO a VALUES (2)"))
    t2.commit()  # ... but T2 commits first
    sql(fresh_db, "INSERT INTO public.cdc_signal VALUES ('w1-open', 'snapshot-window-open', NULL)")
    t1.execute(sa.text("INSERT INTO a VALUES (3)"))
    t1.commit()
    t1.close()
    t2.close()
    engine.dispose()
    assert run_capture(fresh_db, landing).returncode == 0
    events = landed_events(landing)
    order = [(e.collection, (e.key or {}).get("id")) for e in events]
    assert order == [("public.a", 2), ("public.cdc_signal", "w1-open"), ("public.a", 1), ("public.a", 3)]
    positions = [e.position for e in events]
    assert positions == sorted(positions)


def test_keyless_tables_are_refused_or_left_out(fresh_db: str, tmp_path: Path) -> None:
    sql(fresh_db, "CREATE TABLE keyed (id int PRIMARY KEY)", "CREATE TABLE loose (v int)")
    with pytest.raises(CaptureError, match=r"public\.loose has no primary key and REPLICA IDENTITY DEFAULT"):
        PostgresCapture(fresh_db, tmp_path, collections=["public\\.loose"]).setup()
    warnings = PostgresCapture(fresh_db, tmp_path).setup()
    assert any("public.loose" in w for w in warnings)
    sql(fresh_db, "UPDATE loose SET v = 1")  # would fail if the table had been published
    res = run_capture(fresh_db, tmp_path, "--collections", "public.nothing")
    assert res.returncode == 2
    assert "--collections 'public.nothing' matches no table" in res.stderr
    res = run_capture(fresh_db, tmp_path, "--tables", "public.nothing")  # not an option: argparse says so
    assert res.returncode == 2 and "unrecognized arguments: --tables" in res.stderr


def test_status_reports_lag_and_files(fresh_db: str, tmp_path: Path) -> None:
    sql(fresh_db, "CREATE TABLE s (id int PRIMARY KEY)")
    PostgresCapture(fresh_db, tmp_path).run()
    sql(fresh_db, "INSERT INTO s SELECT generate_series(1, 1000)")
    before = capture_status(fresh_db, tmp_path)
    assert before["exists"]
    assert before["lag_bytes"] > 0
    assert run_capture(fresh_db, tmp_path).returncode == 0
    after = capture_status(fresh_db, tmp_path)
    assert after["files"] == 1
    assert after["landed_position"][0] > 0
    assert after["lag_bytes"] < before["lag_bytes"]
