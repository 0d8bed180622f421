"""The capture landing the typed event log: every change kind, in the collection's own types, once."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdc_backfill.capture.postgres.loop import CRASH_ENV, PostgresCapture
from cdc_backfill.events.positions import position_of_key
from cdc_backfill.landing.event_log import log_files, read_schema
from cdc_backfill.landing.manifests import landed_log_position
from tests.support.pg import sql

pytestmark = pytest.mark.pg


def rows(landing: Path, collection: str) -> list[dict[str, object]]:
    out = []
    for path in log_files(landing, collection):
        for r in pq.read_table(path).to_pylist():
            r["_cdc_position"] = position_of_key(r["_cdc_position"])  # type: ignore[arg-type]
            out.append(r)
    return sorted(out, key=lambda r: r["_cdc_position"])  # type: ignore[arg-type,return-value]


def test_every_change_kind_lands_typed_and_a_second_drain_lands_nothing_again(
    fresh_db: str, tmp_path: Path
) -> None:
    sql(fresh_db, "CREATE TABLE t (id int PRIMARY KEY, n numeric(12,2), ts timestamp, b bytea, doc text)")
    landing = tmp_path / "landing"
    PostgresCapture(fresh_db, landing).run()  # publication and slot; nothing to land yet
    big = "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, 300) i)"
    sql(
        fresh_db,
        f"INSERT INTO t VALUES (1, 12.50, '2024-01-02 03:04:05.123456', '\\x01ff', {big})",
        "UPDATE t SET n = 13 WHERE id = 1",  # doc unchanged and TOASTed: not sent
        "UPDATE t SET id = 2 WHERE id = 1",  # a key change
        "DELETE FROM t WHERE id = 2",
        "INSERT INTO t VALUES (3, NULL, NULL, '', '')",
        "TRUNCATE t",
    )
    stats = PostgresCapture(fresh_db, landing).run()
    got = rows(landing, "public.t")
    assert [(r["_cdc_op"], r["id"]) for r in got] == [
        ("c", 1), ("u", 1), ("d", 1), ("c", 2), ("d", 2), ("c", 3), ("t", None)
    ]  # fmt: skip
    first, toast, gone, moved = got[0], got[1], got[2], got[3]
    assert first["n"] == Decimal("12.50") and first["ts"] == dt.datetime(2024, 1, 2, 3, 4, 5, 123456)
    assert first["b"] == b"\x01\xff" and len(str(first["doc"])) == 9600
    assert toast["n"] == Decimal("13.00") and toast["doc"] is None and toast["_cdc_unchanged"] == ["doc"]
    assert len(gone["_cdc_position"]) == 3 and gone["_cdc_position"][:2] == moved["_cdc_position"][:2]  # type: ignore[index]
    assert got[5]["b"] == b"" and got[5]["doc"] == "" and got[5]["n"] is None
    schema = read_schema(landing, "public.t")
    assert schema is not None and schema.key == ("id",) and [v.version for v in schema.versions] == [1]
    assert landed_log_position(landing) == got[-1]["_cdc_position"]
    again = PostgresCapture(fresh_db, landing).run()
    assert again.events == 0 and len(rows(landing, "public.t")) == len(got) and stats.events >= len(got)


def test_killed_after_landing_before_confirming_lands_each_event_once(fresh_db: str, tmp_path: Path) -> None:
    """The slot sends again what was landed but not confirmed: the restart skips it by position."""
    sql(fresh_db, "CREATE TABLE k (id int PRIMARY KEY, v text)")
    landing = tmp_path / "landing"
    PostgresCapture(fresh_db, landing).run()
    sql(fresh_db, "INSERT INTO k SELECT i, 'v' || i FROM generate_series(1, 500) i", "UPDATE k SET v = 'w'")
    code = f"from cdc_backfill.capture.postgres.loop import PostgresCapture as C; C({fresh_db!r}, {str(landing)!r}).run()"
    killed = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, CRASH_ENV: "after-rename"}, timeout=300
    )
    assert killed.returncode == -signal.SIGKILL
    assert len(rows(landing, "public.k")) == 1000  # landed, not confirmed
    PostgresCapture(fresh_db, landing).run()  # the server sends the same transactions again
    got = rows(landing, "public.k")
    assert len(got) == 1000 and len({r["_cdc_position"] for r in got}) == 1000  # type: ignore[misc]


def test_a_fence_alone_moves_the_landed_position_past_it(fresh_db: str, tmp_path: Path) -> None:
    # the Airflow sensor waits for the landed position to pass a fence: a message in a transaction of
    # its own, which lands no event in the log
    import sqlalchemy as sa

    from cdc_backfill.events.positions import pg_lsn
    from cdc_backfill.landing.stream import landed_position

    landing = tmp_path / "landing"
    PostgresCapture(fresh_db, landing).run()
    engine = sa.create_engine(fresh_db)
    with engine.begin() as conn:
        fence = pg_lsn(
            conn.execute(sa.text("SELECT pg_logical_emit_message(true, 'f', 'x')::text")).scalar_one()
        )
    engine.dispose()
    assert landed_position(landing)[0] < fence
    PostgresCapture(fresh_db, landing).run()
    assert landed_position(landing)[0] >= fence
    assert log_files(landing, "public.t") == []


def test_the_cli_lands_the_log_when_asked(fresh_db: str, tmp_path: Path) -> None:
    from tests.support.capture import run_capture

    sql(fresh_db, "CREATE TABLE t (id int PRIMARY KEY, v text)")
    landing = tmp_path / "landing"
    assert run_capture(fresh_db, landing).returncode == 0
    sql(fresh_db, "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    done = run_capture(fresh_db, landing)
    assert done.returncode == 0, done.stderr
    assert [r["id"] for r in rows(landing, "public.t")] == [1, 2]
    assert not (landing / "stream").exists()
