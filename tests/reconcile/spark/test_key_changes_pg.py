"""Key changes carry their unchanged columns, on real PostgreSQL: an ``UPDATE ... SET id = ...`` that
leaves a TOASTed column unchanged lands a delete and a create without that column, and the new key
takes the old key's value: from the previous state, from an earlier event of the same run, along a
chain of moves, and never across a delete of the old key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cdc_backfill.reconcile.spark.job import reconcile_landing
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE
from cdc_backfill.snapshot.engine import SnapshotEngine
from tests.support.judge import columns_of, keyed_state, source_state
from tests.support.pg import drain, plain_url, send, sql
from tests.support.runs import assert_manifest_totals_are_sparks
from tests.support.state import state_frame

pytestmark = [pytest.mark.pg, pytest.mark.spark]

DOCS = "public.docs"
BIG = "(SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 200))"  # 6.4 kB, out of line


def state_is_source(spark, url: str, state: Path) -> None:  # type: ignore[no-untyped-def]
    _, key = columns_of(url, DOCS)
    got = keyed_state(state_frame(spark, state, DOCS).collect(), key)
    want = source_state(url, DOCS, key)
    wrong = sorted(k for k in want.keys() | got.keys() if got.get(k) != want.get(k))
    assert not wrong, f"{len(wrong)} rows differ, e.g. {wrong[:5]}"


def test_a_moved_row_keeps_its_unchanged_toast_value(spark, fresh_db: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    url = fresh_db
    sql(
        url,
        "CREATE TABLE docs (id int PRIMARY KEY, v text, doc text)",
        "ALTER TABLE docs ALTER COLUMN doc SET STORAGE EXTERNAL",  # stored out of line, uncompressed
        f"INSERT INTO docs SELECT i, 'v' || i, {BIG} FROM generate_series(1, 40) i",
    )
    landing, state = tmp_path / "landing", tmp_path / "state"
    drain(url, landing)
    send(url, "public\\.docs", chunk_size=15)
    SnapshotEngine(url, landing).run()
    drain(url, landing)
    reconcile_landing(spark, landing, state, [DOCS])
    state_is_source(spark, url, state)

    sql(
        url,
        "UPDATE docs SET id = id + 1000 WHERE id <= 5",  # the value is in the previous state
        "UPDATE docs SET id = id + 1000 WHERE id BETWEEN 1001 AND 1003",  # a chain: 1 -> 1001 -> 2001
        f"UPDATE docs SET doc = {BIG} WHERE id = 10",
        "UPDATE docs SET id = 3010 WHERE id = 10",  # the value is in an earlier event of this run
        "DELETE FROM docs WHERE id = 20",
        f"INSERT INTO docs VALUES (20, 'again', {BIG})",
        "UPDATE docs SET id = 3020 WHERE id = 20",  # the new row's value, not the deleted one's
        "UPDATE docs SET v = 'moved twice' WHERE id = 2002",  # a TOAST-only update after the moves
    )
    drain(url, landing)
    info = reconcile_landing(spark, landing, state, [DOCS])["collections"][DOCS]
    assert info["rows_with_unknown_columns"] == 0
    state_is_source(spark, url, state)

    # the same moves in one run over everything
    full = tmp_path / "full"
    again = reconcile_landing(spark, landing, full, [DOCS])["collections"][DOCS]
    assert again["rows_with_unknown_columns"] == 0
    state_is_source(spark, url, full)
    # the capture's manifests count the key changes' creates that left a column out, as Spark does
    assert_manifest_totals_are_sparks(spark, landing, DOCS, DEFAULT_SIGNAL_TABLE)


def test_a_row_whose_old_value_was_never_known_is_re_read(spark, fresh_db: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The table was filled before the capture started and never snapshotted: a moved row's unchanged
    TOAST value is nowhere. The state marks the row incomplete, `cdc-backfill signal reread` (as a
    user types it) sends a snapshot of exactly that key, and after it the row is complete."""
    url = fresh_db
    sql(
        url,
        "CREATE TABLE docs (id int PRIMARY KEY, v text, doc text)",
        "ALTER TABLE docs ALTER COLUMN doc SET STORAGE EXTERNAL",
        f"INSERT INTO docs SELECT i, 'v' || i, {BIG} FROM generate_series(1, 10) i",
    )
    landing, state = tmp_path / "landing", tmp_path / "state"
    drain(url, landing)  # the capture starts here: the rows above are not in the stream
    sql(url, "UPDATE docs SET id = 500 WHERE id = 4", "UPDATE docs SET v = 'w' WHERE id = 7")
    drain(url, landing)
    send(url, "public\\.docs", condition="id > 1000")  # a snapshot that reads nothing: the windows exist
    SnapshotEngine(url, landing).run()
    drain(url, landing)
    info = reconcile_landing(spark, landing, state, [DOCS])["collections"][DOCS]
    assert info["rows_with_unknown_columns"] == 2  # 500 (moved) and 7 (updated): doc never sent

    res = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "signal", "reread", "--state", "state", "--source", plain_url(url)],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "public.docs: 2 row(s) miss a value" in res.stdout and "id IN (7, 500)" in res.stdout
    SnapshotEngine(url, landing).run()
    drain(url, landing)
    info = reconcile_landing(spark, landing, state, [DOCS])["collections"][DOCS]
    assert info["rows_with_unknown_columns"] == 0
    _, key = columns_of(url, DOCS)
    got = keyed_state(state_frame(spark, state, DOCS).collect(), key)
    want = source_state(url, DOCS, key)
    assert {k: got[k] for k in ((7,), (500,))} == {k: want[k] for k in ((7,), (500,))}
