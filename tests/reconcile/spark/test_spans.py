"""The stream marked by the chunks' key ranges and windows (no join) gives the state and the counts the
join of the READ rows' keys gives, after a snapshot under writers that change rows inside its windows."""

from __future__ import annotations

from pathlib import Path

import pytest

import cdc_backfill.reconcile.spark.runs as spark_runs
from cdc_backfill.reconcile.runs import ReadSpan
from cdc_backfill.reconcile.spark.job import reconcile_landing
from cdc_backfill.reconcile.spark.spans import key_sql, marked_by_spans, window_high
from cdc_backfill.state.spark.frames import read_version
from cdc_backfill.state.table import current_version
from tests.support.judge import columns_of, keyed_state, source_state
from tests.support.pg import snapshot_under_writers
from tests.support.workload import seed

pytestmark = [pytest.mark.spark, pytest.mark.pg, pytest.mark.slow]

TABLES = ["public.orders", "public.words"]  # a bigint key and a text key


def test_marking_by_spans_equals_marking_by_join(
    spark, fresh_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    seed(fresh_db, orders=500)
    landing = tmp_path / "landing"
    snapshot_under_writers(fresh_db, landing, TABLES, chunk_size=100, seed_value=5)
    marked: list[int] = []
    spans = spark_runs.stream_spans

    def counted(*args):  # type: ignore[no-untyped-def]
        found = spans(*args)
        marked.append(len(found) if found is not None else 0)
        return found

    monkeypatch.setattr(spark_runs, "stream_spans", counted)
    by_spans = reconcile_landing(spark, landing, tmp_path / "by-spans", TABLES)
    assert len(marked) == 2 and min(marked) > 1, "both collections' streams marked by their chunks' spans"
    monkeypatch.setattr(spark_runs, "stream_spans", lambda *args: None)
    by_join = reconcile_landing(spark, landing, tmp_path / "by-join", TABLES)
    for coll in TABLES:
        a, b = by_spans["collections"][coll], by_join["collections"][coll]
        # the snapshot changes an order inside every window of orders: READ rows dropped there
        assert a["reads_dropped"] > 0 or coll != "public.orders", coll
        assert {k: a[k] for k in ("rows", "reads_applied", "reads_dropped")} == {
            k: b[k] for k in ("rows", "reads_applied", "reads_dropped")
        }, coll
        _, key = columns_of(fresh_db, coll)
        states = [
            keyed_state(read_version(spark, current_version(tmp_path / s, coll)).collect(), key)  # type: ignore[arg-type]
            for s in ("by-spans", "by-join")
        ]
        assert states[0] == states[1] == source_state(fresh_db, coll, key), coll


@pytest.mark.parametrize("value", [0, -(2**63), 2**63 - 1, "", "it's", "back\\slash", "ünï", "a`b\n'c"])
def test_a_span_s_key_reads_back_as_itself_in_spark_sql(spark, value) -> None:  # type: ignore[no-untyped-def]
    """The spans' condition is SQL text: every integer and every text a chunk's statistics give is
    written so that Spark reads the same value back (text as its UTF-8 bytes, nothing to escape)."""
    assert spark.sql(f"SELECT {key_sql(value)} AS v").collect()[0].v == value


def test_the_spans_mark_keys_in_a_span_and_positions_inside_its_window(spark) -> None:  # type: ignore[no-untyped-def]
    spans = [
        ReadSpan("c1", 1, 3, b"\x01", b"\x05"),
        ReadSpan("c2", 5, 9, b"\x03", b"\x07"),
        ReadSpan("c3", 12, 12, b"\x00", b"\x09"),
    ]
    rows = [(k, bytearray([p])) for k in [*range(0, 14), None] for p in range(0, 10)]
    frame = spark.createDataFrame(rows, "id long, `p os` binary")
    marked = marked_by_spans(frame, "id", "p os", spans, "in").collect()
    expected = {
        (k, p)
        for k, p in ((k, p[0]) for k, p in rows)
        for s in spans
        if k is not None and s.least <= k <= s.greatest and s.low[0] < p < s.high[0]
    }
    assert {(r.id, r["p os"][0]) for r in marked if r["in"]} == expected
    assert all(r["in"] is not None for r in marked), "a null key is outside every span, not unknown"
    assert marked_by_spans(frame, "id", "p os", [], "in").where("in").count() == 0


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 100])
def test_the_search_finds_the_one_span_that_may_hold_a_key(spark, n: int) -> None:  # type: ignore[no-untyped-def]
    """Any number of spans, integer and text keys: a key is marked exactly when a span holds it (the
    search finds the last span whose least key is at most the key, and never past the end)."""
    spans = [ReadSpan(f"c{i}", 10 * i, 10 * i + 4, b"\x00", b"\xff") for i in range(n)]
    keys = list(range(-3, 10 * n + 3))
    held = {k for k in keys if any(s.least <= k <= s.greatest for s in spans)}
    frame = spark.createDataFrame([(k, bytearray(b"\x01")) for k in keys], "k long, p binary")
    assert {r.k for r in marked_by_spans(frame, "k", "p", spans, "in").where("in").collect()} == held

    # text compares as Spark compares strings: by their UTF-8 bytes
    words = [f"w{k:05d}" for k in keys] + ["", "w", "ü"]
    text = [ReadSpan(s.chunk, f"w{s.least:05d}", f"w{s.greatest:05d}", s.low, s.high) for s in spans]
    frame = spark.createDataFrame([(w, bytearray(b"\x01")) for w in words], "k string, p binary")
    expected = {w for w in words if any(s.least <= w <= s.greatest for s in text)}
    assert {r.k for r in marked_by_spans(frame, "k", "p", text, "in").where("in").collect()} == expected


def test_a_read_row_takes_the_high_of_its_chunk_s_closed_window(spark) -> None:  # type: ignore[no-untyped-def]
    """READ rows take their window's high from the spans, by chunk id (any text); a chunk the spans do
    not name (its window open or not found) gives null: its rows wait."""
    spans = [ReadSpan("s1-0", 1, 3, b"\x01", b"\x05"), ReadSpan("it's`\nü", 5, 9, b"\x03", b"\x07")]
    rows = [("s1-0",), ("it's`\nü",), ("s1-2",)]
    frame = spark.createDataFrame(rows, "`chunk id` string")
    got = {r[0]: r[1] for r in frame.select("`chunk id`", window_high("chunk id", spans)).collect()}
    assert got == {"s1-0": b"\x05", "it's`\nü": b"\x07", "s1-2": None}
    assert frame.select(window_high("chunk id", [])).collect()[0][0] is None
