"""What a reconcile run starts from, and the landing zones it refuses (pure, no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cdc_backfill.events.positions import position_key
from cdc_backfill.landing.layout import log_file_name, rolls_dir
from cdc_backfill.landing.stream import ingest_hint, stream_files, unmoved_json_reason
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.runs import (
    SPANS_AT_MOST,
    ReadSpan,
    RunInput,
    RunMeta,
    chunk_footers,
    landed_log_files,
    next_meta,
    reads_once,
    stream_spans,
)
from cdc_backfill.reconcile.windows import Window


def test_a_landing_with_json_stream_files_is_refused_with_the_ingest_command(tmp_path: Path) -> None:
    landing = tmp_path / "my lake"
    assert unmoved_json_reason(landing) is None  # no stream folder at all
    (landing / "stream" / "topic").mkdir(parents=True)
    (landing / "stream" / ".cdc-1.jsonl.part").write_text("")  # a writer's unfinished file
    (landing / "stream" / "notes.txt").write_text("")
    (landing / "stream" / "_staged").mkdir()
    (landing / "stream" / "_staged" / "c.jsonl").write_text("{}\n")  # under a name ingest leaves alone
    assert unmoved_json_reason(landing) is None
    (landing / "stream" / "a.jsonl").write_text("{}\n")
    (landing / "stream" / "topic" / "b.json").write_text("{}\n")
    assert stream_files(landing) == ["a.jsonl", "topic/b.json"]
    reason = unmoved_json_reason(landing)
    assert reason is not None and "holds 2 JSON stream file(s)" in reason
    assert f"`cdc-backfill ingest --landing '{landing}'`" in reason  # quoted: the folder has a space
    assert "reconcile with --ingest" in reason
    assert ingest_hint(Path("lake")) == "cdc-backfill ingest --landing lake"
    assert (
        ingest_hint(Path("lake"), "public.cdc_signal") == "cdc-backfill ingest --landing lake"
    )  # the default
    # a signal table the user named goes into the command too: without it the ingest cannot type its rows
    assert (
        ingest_hint(Path("lake"), "s.cdc_signal")
        == "cdc-backfill ingest --landing lake --signal-table s.cdc_signal"
    )


def test_a_state_written_by_a_release_that_read_json_still_plans() -> None:
    doc = {"files": ["cdc-1.jsonl"], "judged_chunks": ["c1"], "position": [5, 6]}
    meta = RunMeta.from_json(doc)
    assert meta == RunMeta(frozenset({"c1"}), (5, 6))
    assert json.loads(json.dumps(meta.to_json())) == {"judged_chunks": ["c1"], "position": [5, 6]}


def test_a_version_remembers_the_manifests_that_end_after_its_position(tmp_path: Path) -> None:
    """The next run reads those again (their events of other collections are after the position): only
    the manifests it has not read can hold late events, or anything new."""
    rolls = rolls_dir(tmp_path)
    rolls.mkdir(parents=True)
    names = {m: position_key(p).hex() for m, p in {"a": (5,), "b": (9,), "c": (12,)}.items()}
    for m, name in names.items():
        (rolls / f"r{name}.json").write_text(json.dumps({"files": [f"s.t/v1/{m}.parquet"], "events": 2}))
    landed = landed_log_files(tmp_path, (5,))
    assert list(landed.manifests) == [names["b"], names["c"]] and landed.events == 4
    meta = next_meta(RunInput("s.t", None), [], (7,), None, landed.manifests)
    assert meta.manifests == {names["b"], names["c"]}  # both end after 7
    assert RunMeta.from_json(json.loads(json.dumps(meta.to_json()))) == meta
    assert next_meta(RunInput("s.t", None), [], (9,), None, landed.manifests).manifests == {names["c"]}
    unread = landed.unread(meta)
    assert (unread.files, unread.events) == ([], 0)
    (rolls / f"r{position_key((10,)).hex()}.json").write_text(json.dumps({"files": ["s.t/v1/d.parquet"]}))
    assert landed_log_files(tmp_path, (7,)).unread(meta).files == ["s.t/v1/d.parquet"]


def _manifest(rolls: Path, files: dict[str, tuple[tuple[int, ...], tuple[int, ...]]], counts: object) -> None:
    """A roll manifest naming log files of the given collections and spans, with ``counts``."""
    names = [f"{c}/v0001/{log_file_name(position_key(a), position_key(b))}" for c, (a, b) in files.items()]
    last = max(b for _a, b in files.values())
    doc = {"files": names, "position": list(last), "events": 1, **({"counts": counts} if counts else {})}
    (rolls / f"r{position_key(last).hex()}.json").write_text(json.dumps(doc))


def test_a_runs_totals_come_from_the_manifests_when_every_event_is_new(tmp_path: Path) -> None:
    rolls = rolls_dir(tmp_path)
    rolls.mkdir(parents=True)
    zero = dict.fromkeys(["c", "u", "d", "r", "t", "left_out", "unchanged"], 0)
    orders = {**zero, "c": 5, "u": 3, "d": 2, "r": 1, "t": 1, "left_out": 1, "unchanged": 2}
    _manifest(rolls, {"public.orders": ((10, 1), (20, 1)), "public.cdc_signal": ((12, 1), (21, 1)),
                      "public.tags": ((11, 1), (90, 1))}, {"public.orders": orders, "public.tags": {**zero, "c": 7}})  # fmt: skip
    _manifest(rolls, {"public.orders": ((30, 1), (40, 1))}, {"public.orders": {**zero, "u": 4}})
    totals = landed_log_files(tmp_path, (5, 1)).totals("public.orders", "public.cdc_signal", (5, 1))
    assert totals == {
        "top": position_key((40, 1)),  # the greatest of the collection's and the signal collection's
        "late": 0, "applied": 15, "deletes": 2, "truncates": 1, "stream_reads": 1, "left_out": 1,
        "unchanged": 2,
    }  # fmt: skip
    # a file that may hold events at or before the state's position: only Spark can tell which are late
    assert landed_log_files(tmp_path, (12, 1)).totals("public.orders", "public.cdc_signal", (12, 1)) is None
    assert landed_log_files(tmp_path).totals("public.tags", "public.cdc_signal", None) == {
        **dict.fromkeys(["late", "deletes", "truncates", "stream_reads", "left_out", "unchanged"], 0),
        "top": position_key((90, 1)), "applied": 7,
    }  # fmt: skip
    # a manifest written before manifests had counts: Spark counts
    _manifest(rolls, {"public.tags": ((95, 1), (99, 1))}, None)
    assert landed_log_files(tmp_path).totals("public.orders", "public.cdc_signal", None) is None


def _chunk(path: Path, ids: list, **options) -> Path:  # type: ignore[type-arg, no-untyped-def]
    pq.write_table(pa.table({"id": ids, "v": ["x"] * len(ids)}), path, **options)
    return path


def test_chunk_footers_give_each_chunks_rows_and_key_range(tmp_path: Path) -> None:
    chunks = [_chunk(tmp_path / "c1.parquet", [3, 1, 2]), _chunk(tmp_path / "c2.parquet", [])]
    footers = chunk_footers(chunks, "id")
    assert footers.rows == {"c1": 3, "c2": 0}
    assert footers.key_ranges == [(1, 3)]  # a chunk that read no rows reads no key
    assert chunk_footers([], "id") == ({}, {})


def test_keys_are_read_once_only_where_the_chunks_key_ranges_are_apart(tmp_path: Path) -> None:
    def ranges(*chunks: list, **options) -> list:  # type: ignore[type-arg, no-untyped-def]
        paths = [_chunk(tmp_path / f"c{i}.parquet", ids, **options) for i, ids in enumerate(chunks)]
        return chunk_footers(paths, "id").key_ranges

    assert reads_once(ranges([1, 2], [3, 4], [5]))
    assert reads_once(ranges(["b", "c"], ["a"]))  # text keys, in any file order
    assert not reads_once(ranges([1, 3], [3, 4]))  # a key in two chunks (two snapshots of it)
    assert not reads_once(ranges([1, 5], [2, 3]))
    assert not reads_once(ranges([1, None], [3]))  # a NULL is outside every range
    assert not reads_once(ranges([1, 2], [3], write_statistics=False))  # no statistics: not known
    assert not reads_once([(1, 2), (float("nan"), 3.0)])
    assert reads_once([])


def test_the_stream_is_marked_by_spans_only_where_they_tell_a_keys_chunk(tmp_path: Path) -> None:
    def window(chunk: str, low: int, high: int | None) -> Window:
        return Window(chunk, "public.t", "s1", bytes([low]), None if high is None else bytes([high]))

    wins = [window("c1", 10, 20), window("c2", 30, 40), window("c3", 50, None)]  # c3's window is open
    spans = {"c2": (5, 9), "c1": (1, 4), "c3": (10, 12), "c4": (13, 14)}  # c4: no window found
    ids = [PgColumn("id", "bigint", 20), PgColumn("v", "text", 25)]
    assert stream_spans(spans, wins, ids, ["id"]) == [
        ReadSpan("c1", 1, 4, b"\x0a", b"\x14"),  # by least key; only closed windows
        ReadSpan("c2", 5, 9, b"\x1e", b"\x28"),
    ]
    assert stream_spans({"c1": ("a", "c"), "c2": ("d", "d")}, wins, [PgColumn("id", "text", 25)], ["id"])
    assert stream_spans({"c1": (1, 5), "c2": (5, 9)}, wins, ids, ["id"]) is None  # a key in two chunks
    assert stream_spans({"c1": None}, wins, ids, ["id"]) is None  # a file without statistics
    assert stream_spans(spans, wins, [*ids, PgColumn("k", "integer", 23)], ["id", "k"]) is None  # two columns
    assert (
        stream_spans(spans, wins, [PgColumn("id", "numeric(9,2)", 1700)], ["id"]) is None
    )  # not int or text
    many = {f"c{i}": (2 * i, 2 * i + 1) for i in range(SPANS_AT_MOST + 1)}
    wins = [window(f"c{i}", 1, 2) for i in range(SPANS_AT_MOST + 1)]
    assert stream_spans(many, wins, ids, ["id"]) is None  # too many for one expression: the join
    assert stream_spans(dict(list(many.items())[:SPANS_AT_MOST]), wins, ids, ["id"])


def test_a_version_remembers_its_latest_truncate_and_where_its_removals_are() -> None:
    run = RunInput("s.t", None, RunMeta(position=(5,), truncated=(3,), removed="v000001-ab"))
    meta = next_meta(run, [], (9,), truncated=(2,))  # a late truncate before the one applied
    assert (meta.truncated, meta.removed) == ((3,), "v000001-ab")
    later = next_meta(run, [], (9,), truncated=(7,))
    assert later.truncated == (7,)
    assert RunMeta.from_json(json.loads(json.dumps(later.to_json()))) == later
