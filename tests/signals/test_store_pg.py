"""Signals against a real PostgreSQL: every type round-trips, plain-SQL rows read back the same, and
bad input is refused with its reason and nothing written."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from cdc_backfill.cli import main
from cdc_backfill.signals.model import Signal
from cdc_backfill.signals.store import SignalStore
from tests.support.paths import FIXTURES

pytestmark = pytest.mark.pg

SCHEMA_SQL = """
CREATE SCHEMA schema1; CREATE SCHEMA schema2;
CREATE TABLE schema1.table1 (id int PRIMARY KEY, v text);
CREATE TABLE schema2.table2 (id int PRIMARY KEY, v text);
CREATE TABLE schema1.products (id int PRIMARY KEY, color text, quantity int);
CREATE TABLE public.customers (id int PRIMARY KEY, name text, email text);
CREATE TABLE public.events (event_id bigint NOT NULL UNIQUE, payload text);
CREATE TABLE public.logs (code text UNIQUE, line text);
CREATE UNIQUE INDEX customers_email_vip ON public.customers (email) WHERE name = 'vip';
"""


@pytest.fixture
def source(fresh_db: str) -> str:
    engine = sa.create_engine(fresh_db)
    with engine.begin() as conn:
        for stmt in SCHEMA_SQL.strip().split(";"):
            if stmt.strip():
                conn.execute(sa.text(stmt))
    engine.dispose()
    return fresh_db


def signal_rows(url: str) -> list[tuple[str, str, str | None]]:
    return SignalStore(url).rows()


def cli(url: str, *args: str) -> int:
    return main(["signal", args[0], "--source", url, *args[1:]])


def test_init_is_idempotent(source: str) -> None:
    store = SignalStore(source)
    assert store.init() == ["cdc_signal", "cdc_signal_status"]
    assert store.init() == []
    with store.sa_engine.connect() as conn:
        cols = conn.execute(
            sa.text(
                "SELECT column_name, data_type, character_maximum_length FROM information_schema.columns "
                "WHERE table_schema='public' AND table_name='cdc_signal' ORDER BY ordinal_position"
            )
        ).all()
    assert [tuple(c) for c in cols] == [
        ("id", "character varying", 42),
        ("type", "character varying", 32),
        ("data", "character varying", 2048),
    ]


def test_every_signal_type_round_trips(source: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(source, "init") == 0
    assert cli(source, "execute-snapshot", "--collections", "public.customers", "schema1\\..*",
               "--condition", "id > 0", "--chunk-size", "100", "--id", "ex-1") == 0  # fmt: skip
    assert cli(source, "execute-snapshot", "--collections", "public.events", "--surrogate-key", "event_id",
               "--id", "ex-2") == 0  # fmt: skip
    assert cli(source, "execute-snapshot", "--collections", "schema1.products", "--conditions",
               json.dumps([{"data-collection": "schema1.products", "filter": "color = 'blue' AND quantity > 10"}]),
               "--id", "ex-3") == 0  # fmt: skip
    assert cli(source, "stop-snapshot", "--collections", "public.customers", "--id", "st-1") == 0
    assert cli(source, "stop-snapshot", "--id", "st-2") == 0
    assert cli(source, "pause-snapshot", "--id", "pa-1") == 0
    assert cli(source, "resume-snapshot", "--id", "re-1") == 0
    assert cli(source, "log", "--message", "hello from ops", "--id", "lo-1") == 0
    out = capsys.readouterr().out
    assert (
        "execute-snapshot ex-1 written to public.cdc_signal for public.customers, schema1.products, schema1.table1"
        in out
    )

    read = dict(SignalStore(source).read())
    assert read["ex-1"] == Signal("ex-1", "execute-snapshot", ("public.customers", "schema1\\..*"), "incremental",
                                  condition="id > 0", chunk_size=100)  # fmt: skip
    assert read["ex-2"].surrogate_key == "event_id"
    assert read["ex-3"].conditions[0].filter == "color = 'blue' AND quantity > 10"
    assert read["st-1"].collections == ("public.customers",)
    assert read["st-2"].collections == ()
    assert [read[i].type for i in ("pa-1", "re-1", "lo-1")] == ["pause-snapshot", "resume-snapshot", "log"]
    assert read["lo-1"].message == "hello from ops"

    views = {v.id: v for v in SignalStore(source).list()}
    assert views["ex-1"].status == "accepted"
    assert views["ex-1"].collections == ["public.customers", "schema1.products", "schema1.table1"]
    assert views["ex-1"].received_at is not None

    assert cli(source, "list", "--json") == 0
    listed = json.loads(capsys.readouterr().out)
    assert {v["id"] for v in listed} == {"ex-1", "ex-2", "ex-3", "st-1", "st-2", "pa-1", "re-1", "lo-1"}


def test_fixture_rows_inserted_by_plain_sql_are_understood_identically(source: str) -> None:
    store = SignalStore(source)
    store.init()
    rows = json.loads((FIXTURES / "debezium_incremental_snapshot_read.json").read_text())["signals"]
    with store.sa_engine.begin() as conn:
        for i, r in enumerate(rows):  # the fixture reuses one id; the table's key needs three
            conn.execute(sa.text("INSERT INTO public.cdc_signal (id, type, data) VALUES (:id, :type, :data)"),
                         {"id": f"{r['id']}-{i}", "type": r["type"], "data": r["data"]})  # fmt: skip
    read = dict(store.read())
    for i, r in enumerate(rows):
        assert read[f"ad-hoc-1-{i}"] == Signal.from_row(f"ad-hoc-1-{i}", r["type"], r["data"])
    # The same signals built by the CLI's API write the same JSON keys and values.
    built = Signal("x", "execute-snapshot", ("schema1.table1", "schema2.table2"), "incremental")
    assert json.loads(built.data_json()) == json.loads(rows[0]["data"])
    # Nobody has acted on them yet; the documented condition compares to a column named blue, which the
    # check catches before the engine would run it.
    views = {v.id: v for v in store.list()}
    assert views["ad-hoc-1-0"].status == "received"
    catalog = store.catalog()
    with pytest.raises(Exception, match="unknown column 'blue'"):
        store.check(read["ad-hoc-1-1"], catalog)
    assert store.check(read["ad-hoc-1-0"], catalog).collections == ("schema1.table1", "schema2.table2")

    # Before the engine acts it reviews them: statuses are recorded, the bad one with its reason.
    reviewed = dict(store.review_new())
    assert set(reviewed) == {"ad-hoc-1-0", "ad-hoc-1-1", "ad-hoc-1-2"}
    views = {v.id: v for v in store.list()}
    assert views["ad-hoc-1-0"].status == "accepted"
    assert views["ad-hoc-1-1"].status == "rejected"
    assert "unknown column 'blue' (a text value must be in single quotes)" in views["ad-hoc-1-1"].reason
    assert views["ad-hoc-1-2"].status == "accepted"  # the stop
    assert store.review_new() == []  # each signal is reviewed once


BAD_INPUTS = [
    (["execute-snapshot", "--collections", "public.nothing"], "'public.nothing' matches no table"),
    (["execute-snapshot", "--collections", "public.customers", "--condition", "1=1; DROP TABLE customers"], "contains ';'"),
    (["execute-snapshot", "--collections", "public.customers", "--condition", "id IN (SELECT id FROM public.events)"], "contains a subquery"),
    (["execute-snapshot", "--collections", "public.customers", "--condition", "id > 1 -- sneaky"], "contains a comment"),
    (["execute-snapshot", "--collections", "public.customers", "--condition", "colour = 'red'"], "unknown column 'colour'"),
    (["execute-snapshot", "--collections", "public.customers", "--chunk-size", "0"], "chunk-size must be between 1"),
    (["execute-snapshot", "--collections", "public.customers", "--surrogate-key", "nope"], "surrogate-key 'nope' is not a column"),
    (["execute-snapshot", "--collections", "public.events"], "public.events has no primary key"),
    (["execute-snapshot", "--collections", "public.customers", "--surrogate-key", "name"], "surrogate-key 'name' of public.customers has no unique index"),
    (["execute-snapshot", "--collections", "public.customers", "--surrogate-key", "email"], "has no unique index"),  # a partial one
    (["execute-snapshot", "--collections", "public.logs", "--surrogate-key", "code"], "may be NULL, and public.logs has no primary key"),
    (["execute-snapshot", "--collections", "public.customers", "--conditions", "{not json"], "--conditions is not valid JSON"),
    (["execute-snapshot", "--collections", "public.customers", "--condition", "pg_sleep(5) IS NULL"], "calls pg_sleep()"),
    (["execute-snapshot", "--collections", "public.(customers"], "is not a valid regular expression"),
    (["execute-snapshot", "--collections", "public.customers", "--id", "x" * 43], "id must be 1 to 42"),
    (["execute-snapshot", "--collections", "public.customers", "--id", "taken"], "a signal with id 'taken' already exists"),
    (["stop-snapshot", "--collections", "nowhere.none"], "matches no table"),
]  # fmt: skip


def test_bad_input_is_refused_with_distinct_reasons_and_nothing_written(
    source: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = SignalStore(source)
    store.init()
    assert cli(source, "log", "--message", "first", "--id", "taken") == 0
    capsys.readouterr()
    before = signal_rows(source)
    reasons = []
    for args, message in BAD_INPUTS:
        assert cli(source, *args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("refused: "), err
        assert message in err, (message, err)
        reasons.append(err)
    assert len(set(reasons)) == len(BAD_INPUTS)  # each refusal says something different
    assert signal_rows(source) == before
    with store.sa_engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM public.cdc_signal_status")).scalar_one() == 1


def test_missing_signal_table_and_unreachable_source(source: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(source, "pause-snapshot") == 2
    assert "table: run `cdc-backfill signal init` on this source first" in capsys.readouterr().err
    bad = "postgresql+psycopg2://ops:hunter2@127.0.0.1:1/none"
    assert cli(bad, "pause-snapshot") == 3
    err = capsys.readouterr().err
    assert "cannot reach the source" in err
    assert "hunter2" not in err


def test_dry_run_writes_nothing(source: str, capsys: pytest.CaptureFixture[str]) -> None:
    SignalStore(source).init()
    assert cli(source, "execute-snapshot", "--collections", "public.customers", "--dry-run") == 0
    assert "would write" in capsys.readouterr().out
    assert signal_rows(source) == []
