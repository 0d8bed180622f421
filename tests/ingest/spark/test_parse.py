"""The Spark path parses landing files exactly like the pure-Python parser, file and line kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cdc_backfill.events import ParseOptions, parse_file
from cdc_backfill.events.model import dumps
from cdc_backfill.ingest.spark.parse import (
    events_only,
    landing_events,
    parse_landing_files,
    parse_local_files,
    quarantined_only,
)
from cdc_backfill.spark.positions import position_of
from tests.support.paths import FIXTURES

pytestmark = pytest.mark.spark


def _as_jsonl(src: Path, dst: Path) -> None:
    doc = json.loads(src.read_text())
    dst.write_bytes(b"".join(dumps(e) + b"\n" for e in doc["events"]))


def test_fixtures_parse_identically_in_spark(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing = tmp_path / "landing"
    landing.mkdir()
    for name in (
        "debezium_postgres_customers.json",
        "debezium_sqlserver_customers.json",
        "dataworks_kafka_no_pk.json",
    ):
        _as_jsonl(FIXTURES / name, landing / (name + "l"))
    (landing / "bad.jsonl").write_text(
        '{"broken": \n' + (landing / "debezium_postgres_customers.jsonl").read_text()
    )
    (landing / "ignored.txt").write_text("not a landing file")

    parsed = landing_events(spark, str(landing)).cache()
    rows = events_only(parsed).collect()
    quarantined = quarantined_only(parsed).collect()

    expected = []
    for f in sorted(landing.glob("*.jsonl")):
        expected.extend((f.name, e.to_dict()) for e in parse_file(str(f)).events)
    got = [
        (
            Path(r.file).name,
            {
                "collection": r.collection,
                "op": r.op,
                "key": None if r.key is None else json.loads(r.key),
                "before": None if r.before is None else json.loads(r.before),
                "after": None if r.after is None else json.loads(r.after),
                "unchanged": list(r.unchanged),
                "position": list(position_of(r.position)),
                "source_ts_ms": r.source_ts_ms,
            },
        )
        for r in rows
    ]
    strip = lambda d: {k: v for k, v in d.items() if k not in ("snapshot", "message")}  # noqa: E731
    assert sorted(got, key=repr) == sorted(((n, strip(d)) for n, d in expected), key=repr)
    assert [(Path(q.file).name, q.line) for q in quarantined] == [("bad.jsonl", 1)]
    assert quarantined[0].quarantine_reason.startswith("not valid JSON")


def test_local_files_read_by_the_workers_give_the_rows_binary_file_gives(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing = tmp_path / "a landing é"  # a space and a non-ASCII letter in the files' names
    landing.mkdir()
    for name in ("debezium_postgres_customers.json", "dataworks_kafka_no_pk.json"):
        _as_jsonl(FIXTURES / name, landing / (name + "l"))
    capture = b'{"key":{"id":1},"value":{"before":null,"after":{"id":1},"source":{"connector":"postgresql",' \
              b'"ts_ms":5,"schema":"public","table":"t","commit_lsn":9,"lsn":8},"op":"c"}}\n'  # fmt: skip
    (landing / "capture.jsonl").write_bytes(capture * 3)  # read in C
    (landing / "bad.jsonl").write_text('{"broken": \n')
    (landing / "empty.jsonl").write_bytes(b"")
    files = sorted(landing.iterdir())
    by_workers = parse_local_files(spark, files)
    by_spark = parse_landing_files(spark.read.format("binaryFile").load([str(f) for f in files]))
    # the shapes come once per worker, and the two ways give workers different files: compared as a set
    rows = [sorted(p.drop("shape").collect(), key=repr) for p in (by_workers, by_spark)]
    shapes = [{r.shape for r in p.where("shape IS NOT NULL").collect()} for p in (by_workers, by_spark)]
    assert rows[0] == rows[1] and shapes[0] == shapes[1]
    assert sum(r.file.endswith("/capture.jsonl") for r in rows[0]) == 3
    assert [(r.file, r.line) for r in rows[0] if r.quarantine_reason] == [
        ("file:" + str(landing / "bad.jsonl"), 1)
    ]


def test_positions_are_exact_keys_that_sort_numerically(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    def event(commit: str, serial: int) -> dict:
        return {"key": {"id": serial}, "value": {"before": None, "after": {"id": serial}, "op": "c",
                "source": {"connector": "sqlserver", "schema": "dbo", "table": "t",
                           "commit_lsn": commit, "change_lsn": commit, "event_serial_no": serial}}}  # fmt: skip

    lines = [
        event("0000000A:00000000:0000", 1),
        event("00000009:FFFFFFFF:FFFF", 2),
        event("FFFFFFFF:FFFFFFFF:FFFF", 3),
    ]
    (tmp_path / "a.jsonl").write_bytes(b"".join(dumps(e) + b"\n" for e in lines))
    ordered = events_only(landing_events(spark, str(tmp_path))).orderBy("position").collect()
    assert [json.loads(r.key)["id"] for r in ordered] == [2, 1, 3]
    assert position_of(ordered[-1].position)[0] == 16**20 - 1  # 80 bits, exact


def test_options_reach_the_workers(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    shutil.copy(FIXTURES / "debezium_oracle_customers.json", tmp_path / "oracle.json")
    _as_jsonl(FIXTURES / "debezium_oracle_customers.json", tmp_path / "oracle.jsonl")
    (tmp_path / "oracle.json").unlink()
    parsed = landing_events(spark, str(tmp_path), ParseOptions(collection="INVENTORY.CUSTOMERS"))
    assert events_only(parsed).where("collection = 'INVENTORY.CUSTOMERS'").count() == 3
    assert quarantined_only(parsed).count() == 0


def test_the_shapes_given_out_are_every_rows_key_and_column_names(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from cdc_backfill.eventlog.schema import OPS
    from cdc_backfill.ingest.spark.totals import collection_totals, event_shapes

    for name in (
        "debezium_postgres_customers.json",
        "debezium_sqlserver_customers.json",
        "dataworks_kafka_no_pk.json",
    ):
        _as_jsonl(FIXTURES / name, tmp_path / (name + "l"))
    parsed = landing_events(spark, str(tmp_path)).cache()
    rows = events_only(parsed).collect()
    shaped = parsed.where("shape IS NOT NULL").collect()
    assert 0 < len(shaped) < len(rows)  # once per shape, not once per row

    expected: dict[str, tuple[set, set]] = {}
    for r in rows:
        if r.op not in OPS or r.collection is None:
            continue
        keys, names = expected.setdefault(r.collection, (set(), set()))
        if r.key is not None:
            keys.add(tuple(sorted(json.loads(r.key))))
        names.update(json.loads(r.after if r.after is not None else r.before or "{}"))
    totals = {r["collection"]: r for r in collection_totals(parsed).collect()}
    got = {c: ({tuple(k) for k in ks}, set(names)) for c, ks, names in event_shapes(totals)}
    assert got == expected


def test_the_collections_without_a_key_come_from_the_totals_quarantine_row() -> None:
    from cdc_backfill.events.debezium import MISSING_KEY
    from cdc_backfill.ingest.spark.totals import keyless_collections

    reasons = [MISSING_KEY.format("public.b"), MISSING_KEY.format("public.a")]
    assert keyless_collections({None: {"keyless": reasons}, "public.c": {"keyless": []}}) == [
        "public.a",
        "public.b",
    ]
    assert keyless_collections({"public.c": {"keyless": []}}) == []


def test_what_wrappers_describe_comes_from_the_totals_the_last_file_winning() -> None:
    from cdc_backfill.ingest.spark.totals import wrapped_descriptions

    def told(*columns: str) -> dict[str, str]:
        return {
            "described": json.dumps(
                {"columns": [{"name": c, "type": "text"} for c in columns], "key": ["id"]}
            )
        }

    totals = {  # a collection's first event in a file may be a row event or not: any totals row holds it
        None: {"described": [{"collection": "public.a", "file": "b.json", **told("id", "v", "w")}]},
        "public.a": {"described": [{"collection": "public.a", "file": "a.json", **told("id", "v")}]},
        "public.b": {"described": []},
    }
    [(name, columns, key)] = [
        (c, [col.name for col in d[0]], d[1]) for c, d in wrapped_descriptions(totals).items()
    ]
    assert (name, columns, key) == ("public.a", ["id", "v", "w"], ["id"])


def test_a_collection_of_few_events_is_one_log_file_not_one_an_input_file() -> None:
    from cdc_backfill.ingest.spark.job import EVENTS_PER_LOG_FILE, log_files_of

    assert [log_files_of(n) for n in (0, 20, EVENTS_PER_LOG_FILE)] == [1, 1, 1]
    assert log_files_of(EVENTS_PER_LOG_FILE + 1) == 2
    assert log_files_of(10_000_000) == 10_000_000 // EVENTS_PER_LOG_FILE
