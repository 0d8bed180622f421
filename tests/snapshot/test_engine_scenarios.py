"""The behavioural scenarios of Debezium's and Flink CDC's suites, against a real PostgreSQL."""

from __future__ import annotations

import glob
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from cdc_backfill.signals.model import Signal, SignalError
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.snapshot.status import summarize
from tests.support.judge import assert_consistent
from tests.support.pg import drain, sql
from tests.support.pg import eager_engine as engine
from tests.support.pg import send_as as send
from tests.support.workload import WORDS, Writers, seed

pytestmark = pytest.mark.pg


def landed(landing: Path, collection: str) -> list[dict]:
    rows: list[dict] = []
    for f in sorted((landing / "snapshots" / collection).glob("*.parquet")):
        rows.extend(pq.read_table(f).to_pylist())
    return rows


def test_composite_and_nullable_keys_with_chunk_size_1_visit_every_row_once(
    fresh_db: str, tmp_path: Path
) -> None:
    sql(
        fresh_db,
        "CREATE TABLE pairs (a int, b text, v int, PRIMARY KEY (a, b))",
        "INSERT INTO pairs SELECT i % 7, 'k' || (i % 11), i FROM generate_series(1, 77) i",
        "CREATE TABLE tagged (id int PRIMARY KEY, code int UNIQUE, v int)",
        "INSERT INTO tagged SELECT i, CASE WHEN i % 4 = 0 THEN NULL ELSE 1000 - i END, i FROM generate_series(1, 60) i",
    )
    send(fresh_db, "s1", "public.pairs", chunk_size=1)
    send(fresh_db, "s2", "public.tagged", chunk_size=1, surrogate_key="code")
    e = engine(fresh_db, tmp_path, readers=2)
    e.run()
    pairs = Counter((r["a"], r["b"]) for r in landed(tmp_path, "public.pairs"))
    assert len(pairs) == 77 and set(pairs.values()) == {1}
    tagged = Counter(r["id"] for r in landed(tmp_path, "public.tagged"))
    assert len(tagged) == 60 and set(tagged.values()) == {1}  # 15 NULL codes read in a chunk of their own
    meta = pq.read_schema(glob.glob(str(tmp_path / "snapshots" / "public.tagged" / "*.parquet"))[0]).metadata
    assert meta[b"cdc.key"] == b'["id"]' and meta[b"cdc.chunk_key"] == b'["code"]'


def test_text_key_under_a_collation_python_does_not_know(icu_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url = icu_server.url
    seed(url, orders=200, lines=200, collation="en-US-x-icu")
    engine_ = sa.create_engine(url)
    with engine_.connect() as conn:
        db_order = [r[0] for r in conn.execute(sa.text("SELECT w FROM words ORDER BY w"))]
    engine_.dispose()
    assert db_order != sorted(db_order), "the collation must order unlike Python, or the test proves nothing"
    landing = tmp_path / "landing"
    drain(url, landing)
    writers = Writers(url, seed_value=3).start()
    try:
        send(url, "w1", "public.words", chunk_size=7)
        engine(url, landing, readers=2).run()
    finally:
        writers.stop()
    drain(url, landing)
    assert_consistent(url, landing, ["public.words"])
    assert any(w.startswith("_") for w in WORDS)


def marks(url: str, kind: str) -> list[dict]:
    """The data of the engine's start, done or ended rows in the signal table (docs/design.md §6 rule 7)."""
    import json

    rows = SignalStore(url).rows()
    return [json.loads(d) for _, t, d in rows if t == f"snapshot-collection-{kind}"]


def test_stop_all_and_stop_one_of_two(fresh_db: str, tmp_path: Path) -> None:
    seed(fresh_db, orders=400, lines=400)
    send(fresh_db, "both", "public.orders", "public.lines", chunk_size=20)
    stopped = {"done": False}

    def stop_orders_early(shape, after):  # type: ignore[no-untyped-def]
        if shape.collection == "public.orders" and after is not None and not stopped["done"]:
            SignalStore(fresh_db).send(Signal("stop-1", "stop-snapshot", ("public.orders",), "incremental"))
            stopped["done"] = True

    engine(fresh_db, tmp_path, window_hook=stop_orders_early).run()
    status = {s.collection: s for s in summarize(engine(fresh_db, tmp_path).progress.ranges())}
    assert status["public.orders"].status == "stopped"
    assert status["public.orders"].rows < 400
    assert status["public.lines"].status == "done" and status["public.lines"].rows == 400
    views = {v.id: v for v in SignalStore(fresh_db).list()}
    assert views["stop-1"].status == "done"
    assert "public.orders" in views["stop-1"].reason
    # both started; only the collection that was read to its end says it is done (with its chunk files)
    assert sorted(m["data-collection"] for m in marks(fresh_db, "start")) == ["public.lines", "public.orders"]
    [done] = marks(fresh_db, "done")
    assert done["data-collection"] == "public.lines" and done["signal"] == "both"
    [ended] = marks(fresh_db, "ended")  # the stopped one says no done row will come
    assert (ended["data-collection"], ended["signal"], ended["status"]) == (
        "public.orders",
        "both",
        "stopped",
    )
    assert done["chunks"] == len(list((tmp_path / "snapshots" / "public.lines").glob("*.parquet"))) == 21

    send(fresh_db, "again", "public.orders", "public.words", chunk_size=20)
    calls = {"n": 0}

    def stop_everything(shape, after):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 2:
            SignalStore(fresh_db).send(Signal("stop-all", "stop-snapshot", (), "incremental"))

    e = engine(fresh_db, tmp_path, window_hook=stop_everything)
    e.run()
    again = {s.collection: s.status for s in summarize(e.progress.ranges()) if s.signal_id == "again"}
    assert again == {"public.orders": "stopped", "public.words": "stopped"}
    assert {v.id: v.status for v in SignalStore(fresh_db).list()}["again"] == "stopped"


def test_pause_then_resume(fresh_db: str, tmp_path: Path) -> None:
    seed(fresh_db, orders=300, lines=10)
    landing = tmp_path / "landing"
    drain(fresh_db, landing)
    send(fresh_db, "p1", "public.orders", chunk_size=25)
    paused = {"done": False}

    def pause_once(shape, after):  # type: ignore[no-untyped-def]
        if after is not None and not paused["done"]:
            SignalStore(fresh_db).send(Signal("pause-1", "pause-snapshot", snapshot_type="incremental"))
            paused["done"] = True

    e = engine(fresh_db, landing, window_hook=pause_once)
    e.run()  # returns when paused
    [before] = summarize(e.progress.ranges())
    assert before.status == "running" and 0 < before.rows < 300
    assert {v.id: v.status for v in SignalStore(fresh_db).list()}["p1"] == "paused"
    engine(fresh_db, landing).run()  # still paused: nothing more is read
    assert summarize(e.progress.ranges())[0].rows == before.rows
    SignalStore(fresh_db).send(Signal("resume-1", "resume-snapshot", snapshot_type="incremental"))
    engine(fresh_db, landing).run()
    [after] = summarize(e.progress.ranges())
    assert after.status == "done" and after.rows == 300
    drain(fresh_db, landing)
    assert_consistent(fresh_db, landing, ["public.orders"])


def test_condition_reads_exactly_the_subset(fresh_db: str, tmp_path: Path) -> None:
    seed(fresh_db, orders=300, lines=10)
    send(fresh_db, "c1", "public.orders", chunk_size=17, condition="id % 3 = 0 AND status = 'new'")
    engine(fresh_db, tmp_path, readers=2).run()
    got = sorted(r["id"] for r in landed(tmp_path, "public.orders"))
    assert got == [i * 2 for i in range(1, 301) if (i * 2) % 3 == 0]
    [done] = marks(fresh_db, "done")  # the reconcile learns the condition from it
    assert done["additional-condition"] == "id % 3 = 0 AND status = 'new'" and done["dialect"] == "postgresql"


def test_surrogate_key_works_and_an_invalid_one_does_not_get_stuck(fresh_db: str, tmp_path: Path) -> None:
    sql(
        fresh_db,
        "CREATE TABLE events (event_id bigint NOT NULL UNIQUE, payload text)",  # no primary key
        "ALTER TABLE events REPLICA IDENTITY FULL",
        "INSERT INTO events SELECT i * 10, 'p' || i FROM generate_series(1, 120) i",
        "CREATE TABLE notes (id int PRIMARY KEY, kind int)",  # kind repeats: not a usable chunk key
        "INSERT INTO notes SELECT i, i % 5 FROM generate_series(1, 50) i",
    )
    with pytest.raises(SignalError, match=r"surrogate-key 'kind' of public\.notes has no unique index"):
        send(fresh_db, "bad", "public.notes", chunk_size=10, surrogate_key="kind")  # refused where written
    # written by plain SQL (as Debezium users do): the engine finds it bad, and goes on with the rest
    bad = Signal(
        "bad", "execute-snapshot", ("public.notes",), "incremental", chunk_size=10, surrogate_key="kind"
    )
    store = SignalStore(fresh_db)
    with store.sa_engine.begin() as conn:
        conn.execute(sa.insert(store.signal).values(**bad.row()))
    store.sa_engine.dispose()
    send(fresh_db, "good", "public.events", chunk_size=10, surrogate_key="event_id")
    e = engine(fresh_db, tmp_path)
    e.run()
    status = {(s.signal_id, s.collection): s for s in summarize(e.progress.ranges())}
    assert ("bad", "public.notes") not in status  # nothing was read for it
    assert status[("good", "public.events")].status == "done"
    assert sorted(r["event_id"] for r in landed(tmp_path, "public.events")) == [i * 10 for i in range(1, 121)]
    meta = pq.read_schema(glob.glob(str(tmp_path / "snapshots" / "public.events" / "*.parquet"))[0]).metadata
    assert meta[b"cdc.key"] == b'["event_id"]'  # no primary key: the surrogate identifies rows
    views = {v.id: v for v in SignalStore(fresh_db).list()}
    assert views["good"].status == "done"
    assert views["bad"].status == "rejected"
    assert "has no unique index" in views["bad"].reason


def test_a_chunk_that_cannot_land_fails_its_collection_even_the_last_one(
    fresh_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader lands a range's last chunk while it reads the next range, and its very last chunk after
    it stopped reading: a landing error is still the collection's, and no done row is written."""
    import cdc_backfill.snapshot.range_reader as range_reader

    sql(
        fresh_db,
        "CREATE TABLE t (id int PRIMARY KEY, v int)",
        "INSERT INTO t SELECT i, i FROM generate_series(1, 100) i",
    )
    land = range_reader.land_chunk

    def full_disk(landing: Path, shape: object, chunk_id: str, table: object, compression: str) -> Path:
        if 100 in table.column("id").to_pylist():  # type: ignore[attr-defined]
            raise OSError("No space left on device")
        return land(landing, shape, chunk_id, table, compression)  # type: ignore[arg-type]

    monkeypatch.setattr(range_reader, "land_chunk", full_disk)
    send(fresh_db, "s1", "public.t", chunk_size=10)
    e = engine(fresh_db, tmp_path, readers=2)
    e.run()
    [status] = summarize(e.progress.ranges())
    assert status.status == "failed" and "No space left on device" in (status.reason or "")
    assert marks(fresh_db, "done") == []
    assert 100 not in {r["id"] for r in landed(tmp_path, "public.t")}
