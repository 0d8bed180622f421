"""A reconcile that reads events it cannot apply says which collection and why, and exits non-zero;
the run summary counts them, and later runs keep naming them until they can be applied."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cdc_backfill.reconcile.unapplied import Unapplied, relative_stream_file
from cdc_backfill.spark.job import reconcile_landing
from tests.spark.scripts import ENCODERS, every_rule, records, write_chunk, write_stream_file
from tests.support.output import spark_info_lines

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "events"


def debezium_sqlserver_lines() -> list[dict[str, Any] | None]:
    """The documented SQL Server events, one ``{"key", "value"}`` record per line, as a Kafka sink lands them."""
    return json.loads((FIXTURES / "debezium_sqlserver_customers.json").read_text())["events"]


def test_the_record_keeps_counts_until_a_collection_can_be_typed() -> None:
    first = Unapplied().updated(["a.jsonl"], {"dbo.customers": 3, "dbo.orders": 2}, [])
    second = first.updated(["b.jsonl"], {"dbo.customers": 1}, ["dbo.orders"])
    assert second == Unapplied(frozenset({"a.jsonl", "b.jsonl"}), {"dbo.customers": 4})
    assert Unapplied.from_json(json.loads(json.dumps(second.to_json()))) == second
    assert relative_stream_file("file:/l/stream/sub/x.jsonl", "stream") == "sub/x.jsonl"


@pytest.mark.spark
@pytest.mark.slow
def test_a_landing_of_debezium_events_fails_naming_the_collection(tmp_path: Path) -> None:
    write_stream_file(tmp_path / "landing", "part-1.jsonl", debezium_sqlserver_lines())
    res = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "reconcile", "--landing", "landing", "--state", "state"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert res.returncode == 1, res.stdout + res.stderr
    assert "ERROR: dbo.customers: 3 events not applied: nothing gives its column types" in res.stderr
    assert "Traceback" not in res.stderr
    assert not spark_info_lines(res.stderr), res.stderr
    summary = json.loads(res.stdout)
    assert summary["events"] == 3 and summary["events_unapplied"] == 3
    assert list(summary["unapplied"]) == ["dbo.customers"]


@pytest.mark.spark
def test_typed_collections_are_applied_and_the_others_named_in_every_run(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    enc = ENCODERS["debezium-postgresql"]
    script = every_rule(enc)
    landing, state = tmp_path / "landing", tmp_path / "state"
    write_stream_file(landing, "a.jsonl", [r for _, r in records(script, enc)])
    for chunk, rows in script.reads.items():
        write_chunk(landing, enc.collection, chunk, rows)
    write_stream_file(landing, "b.jsonl", debezium_sqlserver_lines())

    def reconcile(collections: list[str] | None = None) -> dict[str, Any]:
        return reconcile_landing(spark, landing, state, collections, enc.signal)

    first = reconcile()
    assert first["collections"][enc.collection]["rows"] == len(script.truth)
    assert {c: u["events"] for c, u in first["unapplied"].items()} == {"dbo.customers": 3}
    again = reconcile()  # no new file: still named, not counted twice
    assert again["collections"][enc.collection]["stream_files_read"] == 0
    assert {c: u["events"] for c, u in again["unapplied"].items()} == {"dbo.customers": 3}
    scoped = reconcile([enc.collection])  # a run asked for one collection answers for that one
    assert scoped["unapplied"] == {} and scoped["events_unapplied"] == 0
    named = reconcile(["dbo.customers"])
    assert "nothing gives its column types" in named["unapplied"]["dbo.customers"]["reason"]
    with pytest.raises(ValueError, match="no landing zone at"):
        reconcile_landing(spark, tmp_path / "nowhere", state, None, enc.signal)
