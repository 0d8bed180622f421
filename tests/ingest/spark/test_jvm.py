"""Debezium JSON parsed on the JVM gives what the Python parser gives, line for line: the same events
(positions, keys, rows, unchanged columns, timestamps), the same quarantine with the same reasons, and,
through ``ingest``, the same typed log rows; the common layouts never reach a Python worker."""

from __future__ import annotations

import base64
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from cdc_backfill.eventlog.store import log_files
from cdc_backfill.events import ParseOptions
from cdc_backfill.events.model import dumps
from cdc_backfill.ingest.columns import ColumnSources, read_column_types
from cdc_backfill.ingest.spark import job
from cdc_backfill.ingest.spark.jvm import BY_FILE
from cdc_backfill.ingest.spark.parse import first_pass, parse_landing_files, read_landing_files
from tests.support.paths import FIXTURES
from tests.support.scripts import ENCODERS, every_rule, records

pytestmark = pytest.mark.spark

CAPTURE_SAMPLE = FIXTURES.parent / "capture" / "cdc-capture-sample.jsonl"
TOAST = "__debezium_unavailable_value"


def pg(n: int, op: str = "c", **source: Any) -> dict[str, Any]:
    """A Debezium PostgreSQL value for row ``n``."""
    src = {"connector": "postgresql", "schema": "public", "table": "t", "ts_ms": 1_700_000_000_000 + n}
    row = {"id": n, "v": f"row {n}"}
    return {"before": row if op == "d" else None, "after": None if op == "d" else row, "op": op,
            "source": {**src, **source}}  # fmt: skip


def edge_lines() -> list[str]:
    """Lines of every layout and of every way a line can be wrong."""
    d = json.dumps
    # fmt: off
    lines = [
        d({"key": {"id": 1}, "value": pg(1, commit_lsn="0/16B3748", lsn="0/16B3700")}),  # the server's LSN text
        d({"key": {"id": 2}, "value": pg(2, commit_lsn=900, lsn=800, snapshot=True)}),
        d(pg(3, sequence='["100","120"]', lsn=120, txId=7)),  # the value alone, no Kafka key
        d({"key": {"id": 4}, "value": pg(4, sequence='["100","130"]', lsn=130), "offset": 41, "partition": 2}),
        d({"key": {"id": 5}, "value": pg(5, "u", lsn=140)}),  # no sequence: placed at its own LSN
        d({"key": {"id": 6}, "value": pg(6, "d", sequence=["150", "160"])}),  # the sequence as a list
        d({"key": {"id": 7}, "value": {**pg(7, "u", commit_lsn=170, lsn=165),
                                       "after": {"id": 7, "v": TOAST, "w": [TOAST]}}}),
        d({"key": {"id": 8}, "value": pg(8, commit_lsn=180, lsn=175, ts_ms="bad")}),
        d({"key": {"id": 9}, "value": pg(9, connector="PostgreSQL", commit_lsn=190, lsn=185)}),
        d({"key": {"id": 10}, "value": None}),  # a tombstone
        d({"key": {"id": 11}, "value": pg(11, "x", commit_lsn=200, lsn=200)}),  # an unknown op
        d({"key": {"id": 12}, "value": {**pg(12, commit_lsn=210, lsn=210), "after": "text"}}),
        d({"key": "12", "value": pg(12, commit_lsn=211, lsn=211)}),  # a key that is no object
        d({"key": {"id": 13}, "value": pg(13, commit_lsn=220)}),  # a commit without its lsn
        d({"key": {"id": 14}, "value": pg(14, commit_lsn="zz/1", lsn=1)}),
        d({"key": {"id": 15}, "value": {**pg(15, commit_lsn=230, lsn=230), "source": "text"}}),
        d({"key": {"id": 16}, "value": pg(16, commit_lsn=240, lsn=240)}) + " trailing",
        d({"key": {"id": 17}, "value": pg(17, commit_lsn=250, lsn=250)}) * 2,  # two records run together
        '{"key": {"id": 18}, "value": {"op": "c", "after": {"v": NaN}}}',
        '{"broken": ',
        "   ",
        "[1, 2]",
        d({"key": {"id": 19}, "value": pg(19, sequence='["1", "2", "3"]')}),
        d({"key": {"id": 20}, "value": {**pg(20), "source": {"schema": "public", "table": "t", "lsn": 5}}}),
        d({"key": {"id": 21}, "value": {"op": "c", "after": {"id": 21}, "source": {"connector": "postgresql",
                                        "lsn": 5}}}),  # no table: no collection
        d({"key": {"id": 22}, "value": {"op": "t", "before": None, "after": None,
                                        "source": {**pg(22)["source"], "lsn": 260}}}),
        d({"id": 23, "status": "BEGIN", "event_count": None}),  # a transaction marker
        d({"key": {"id": 24},
           "value": {"before": None, "after": {"id": 24}, "op": "c", "source": {"connector": "sqlserver",
                     "schema": "dbo", "table": "t", "commit_lsn": "0000002A:00000010:0003"}}}),
        d({"key": {"id": 25},
           "value": {"before": None, "after": {"id": 25}, "op": "c", "source": {"connector": "oracle",
                     "schema": "APP", "table": "T", "scn": "123456"}}}),
        d({"key": {"id": 26},
           "value": {"before": None, "after": {"id": 26}, "op": "c", "source": {"connector": "mysql",
                     "db": "app", "table": "t", "file": "mysql-bin.000012", "pos": 77}}}),
        d({"key": {"id": 27}, "value": pg(27, commit_lsn=str(2**70), lsn=1)}),  # beyond a bigint
        d({"key": {"id": 28}, "value": {**pg(28, commit_lsn=280, lsn=280),
                                        "source": {**pg(28)["source"], "schema": "a.b", "commit_lsn": 280,
                                                   "lsn": 280}}}),
    ]
    # fmt: on
    return [line + "\n" for line in lines] + ["\r\n"]


def restart_lines() -> list[str]:
    """A connector restart: the first transaction after it has no last commit LSN (placed by the lines
    before it, so the file is parsed whole by Python)."""
    return [
        json.dumps(pg(1, sequence='["100","110"]', lsn=110, txId=1)) + "\n",
        json.dumps(pg(2, sequence='[null,"300"]', lsn=300, txId=2)) + "\n",
        json.dumps(pg(3, sequence='[null,"310"]', lsn=310, txId=2)) + "\n",
    ]


def write_inputs(folder: Path) -> None:
    folder.mkdir()
    for f in FIXTURES.glob("*.json"):  # every fixture as lines, and one as the document it is
        doc = json.loads(f.read_text())
        (folder / f"{f.stem}.jsonl").write_bytes(b"".join(dumps(e) + b"\n" for e in doc["events"]))
    (folder / "document.json").write_text((FIXTURES / "debezium_oracle_customers.json").read_text())
    (folder / "capture.jsonl").write_bytes(CAPTURE_SAMPLE.read_bytes())
    for name, enc in ENCODERS.items():  # one history in every connector's layout
        lines = [json.dumps(r) + "\n" for _n, r in records(every_rule(enc), enc)]
        (folder / f"script-{name}.jsonl").write_text("".join(lines))
    (folder / "edges.jsonl").write_text("".join(edge_lines()))
    (folder / "restart.jsonl").write_text("".join(restart_lines()))
    (folder / "latin1.jsonl").write_bytes(json.dumps(pg(1, commit_lsn=1, lsn=1)).encode() + b"\xe9\n")


def comparable(row: Any) -> tuple[Any, ...]:
    """A parsed row as both parsers must agree on it. ``after`` leaves out the columns ``unchanged``
    names (the JVM keeps their placeholders; the log's typing nulls them)."""
    load = lambda t: None if t is None else json.loads(t)  # noqa: E731
    after = load(row["after"])
    if after is not None:
        after = {k: v for k, v in after.items() if k not in (row["unchanged"] or [])}
    return (Path(row["file"]).name, row["line"], row["collection"], row["op"], load(row["key"]),
            load(row["before"]), after, tuple(row["unchanged"] or ()), bytes(row["position"] or b""),
            row["source_ts_ms"], row["format"], row["snapshot"], row["quarantine_reason"], row["record"])  # fmt: skip


def test_every_layout_parses_on_the_jvm_as_python_parses_it(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_inputs(tmp_path / "in")
    files = read_landing_files(spark, str(tmp_path / "in"))
    options = ParseOptions(key_columns={"public.t": ["id"]})
    jvm = parse_landing_files(files, options, checkpoint=True).collect()
    python = parse_landing_files(files, options, jvm=False).collect()
    assert sorted(map(comparable, jvm), key=repr) == sorted(map(comparable, python), key=repr)
    assert len(python) > 100 and any(r["quarantine_reason"] for r in python)

    rows = first_pass(files, options).select("file", "line", "route").collect()
    routes = Counter((Path(r["file"]).name, r["route"]) for r in rows)
    for name in ENCODERS:  # every Debezium connector's layout: on the JVM, truncates aside
        if name != "dataworks":
            lines = (tmp_path / "in" / f"script-{name}.jsonl").read_text().splitlines()
            routed = [json.loads(lines[r["line"] - 1]) for r in rows if r["route"] and name in r["file"]]
            assert routes[(f"script-{name}.jsonl", None)] >= 17
            assert all(r["value"]["op"] == "t" for r in routed), routed
    assert routes[("capture.jsonl", None)] == 8  # the messages and the truncate go to Python
    assert routes[("script-dataworks.jsonl", None)] == 0
    assert routes[("document.json", BY_FILE)] == routes[("restart.jsonl", BY_FILE)] == 1
    assert routes[("latin1.jsonl", BY_FILE)] == 1
    jvm_lines = sorted(r["line"] for r in rows if r["file"].endswith("edges.jsonl") and r["route"] is None)
    assert jvm_lines == [1, 2, 3, 4, 5, 6, 7, 8, 9, 28, 29, 30, 32], jvm_lines


def test_the_jvm_keeps_a_line_needing_its_stream_with_python(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A restart's place needs the lines before it: parsed per line it would sort first."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text("".join(restart_lines()))
    options = ParseOptions(key_columns={"public.t": ["id"]})
    rows = parse_landing_files(read_landing_files(spark, str(tmp_path / "in")), options, checkpoint=True)
    got = rows.orderBy("line").collect()
    positions = [r["position"] for r in got]
    assert None not in positions, got
    assert positions == sorted(positions) and len(set(positions)) == 3


# ---------------------------------------------------------------- typed, through ingest


def micro(days: int) -> int:
    return days * 86_400_000_000


def field(name: str, kind: str, semantic: str | None = None, **params: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, "optional": True, "field": name}
    if semantic:
        out["name"] = semantic
    if params:
        out["parameters"] = {k: str(v) for k, v in params.items()}
    return out


FIELDS = [
    field("id", "int32"),
    field("ts", "int64", "io.debezium.time.MicroTimestamp"),
    field("d", "int32", "io.debezium.time.Date"),
    field("t", "int64", "io.debezium.time.MicroTime"),
    field("tz", "string", "io.debezium.time.ZonedTimestamp"),
    field("b", "bytes"),
    field("doc", "string"),
]
DECIMAL = field("amount", "bytes", "org.apache.kafka.connect.data.Decimal", scale=2)
MILLIS = field("at", "int64", "io.debezium.time.Timestamp")


def wrapped(n: int, fields: list[dict[str, Any]], row: dict[str, Any], op: str = "c") -> str:
    """A {key, value} record with the JSON converter's schemas, as a Kafka sink writes it."""
    struct = {"type": "struct", "optional": True, "name": "srv.public.w.Value", "fields": fields}
    source = {"type": "struct", "field": "source", "fields": [field("lsn", "int64")]}
    envelope = {"type": "struct", "name": "srv.public.w.Envelope",
                "fields": [{**struct, "field": "before"}, {**struct, "field": "after"}, source,
                           field("op", "string")]}  # fmt: skip
    key_schema = {"type": "struct", "name": "srv.public.w.Key", "fields": [field("id", "int32")]}
    src = {
        "connector": "postgresql",
        "schema": "public",
        "table": "w",
        "commit_lsn": 1000 + n,
        "lsn": 1000 + n,
    }
    value = {"before": None, "after": row, "op": op, "source": src}
    record = {"key": {"schema": key_schema, "payload": {"id": row["id"]}},
              "value": {"schema": envelope, "payload": value}}  # fmt: skip
    return json.dumps(record) + "\n"


def wrapped_lines() -> list[str]:
    row = {"id": 1, "ts": micro(19_000) + 123_456, "d": 19_000, "t": 3_723_000_001, "tz": "2024-01-02T01:04:05Z",
           "b": base64.b64encode(b"\x00\xff").decode(), "doc": "long text"}  # fmt: skip
    cents = base64.b64encode((-12_345).to_bytes(2, "big", signed=True)).decode()
    return [
        wrapped(1, FIELDS, row),
        wrapped(2, FIELDS, {**row, "id": 2, "doc": TOAST}, "u"),  # a TOASTed column left out
        wrapped(3, [*FIELDS, DECIMAL, MILLIS], {**row, "id": 3, "amount": cents, "at": 1_700_000_000_123}),
    ]


def ingested_rows(spark, inbox: Path, landing: Path, jvm: bool, monkeypatch) -> dict[str, list[dict]]:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(job, "parse_landing_files", lambda *a, **k: parse_landing_files(*a, **k, jvm=jvm))
    given = tmp_types(landing.parent)
    job.ingest_landing(spark, landing, [inbox], ColumnSources(landing, "public.cdc_signal", None, given))
    out = {}
    for coll in ("public.t", "public.w"):
        rows = [r for f in log_files(landing, coll) for r in pq.read_table(f).to_pylist()]
        out[coll] = sorted(rows, key=lambda r: r["_cdc_position"])
    return out


def tmp_types(folder: Path) -> dict:  # type: ignore[type-arg]
    path = folder / "types.json"
    path.write_text(
        json.dumps({"public.t": {"key": ["id"], "columns": {"id": "int", "v": "text", "w": "text[]"}}})
    )
    return read_column_types(path)


def test_ingest_types_the_jvms_events_as_the_pythons(spark, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    first, toasted, decimal = wrapped_lines()
    (inbox / "w1.jsonl").write_text(first + toasted)
    (inbox / "w2.jsonl").write_text(decimal)  # columns added: the last file's wrapper describes them
    (inbox / "t.jsonl").write_text("".join(edge_lines()[:9]))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    jvm = ingested_rows(spark, inbox, tmp_path / "a" / "landing", True, monkeypatch)
    python = ingested_rows(spark, inbox, tmp_path / "b" / "landing", False, monkeypatch)
    assert jvm == python
    assert [r["amount"] for r in jvm["public.w"]] == [
        None,
        None,
        "-123.45",
    ]  # numeric without precision: text
    assert jvm["public.w"][1]["doc"] is None and jvm["public.w"][1]["_cdc_unchanged"] == ["doc"]
    assert len(jvm["public.t"]) == 9
    lines = first_pass(read_landing_files(spark, str(inbox))).where(F.col("route").isNull())
    assert lines.where(F.col("file").endswith("w1.jsonl")).count() == 2
    assert lines.where(F.col("file").endswith("w2.jsonl")).count() == 0  # a decimal's line: Python
