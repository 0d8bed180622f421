"""``ingest`` never lands what it cannot trust, as a user types it: events whose key contradicts the
source's table are refused and nothing lands (a corrected run then lands them); a run that quarantined
every record fails and leaves its input to a corrected run; a pretty-printed JSON document of events,
which ``events parse`` reads, is ingested too."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.cli import cli
from tests.support.paths import FIXTURES
from tests.support.pg import plain_url, sql

pytestmark = [pytest.mark.spark, pytest.mark.pg, pytest.mark.slow]


def lines(path: Path, *records: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def event(op: str, key: dict, after: dict | None, lsn: int) -> dict:
    return {
        "key": key,
        "value": {"before": None if op != "d" else key, "after": after, "op": op,
                  "source": {"connector": "postgresql", "schema": "public", "table": "people",
                             "sequence": json.dumps([str(lsn - 1), str(lsn)])}},
    }  # fmt: skip


def test_events_keyed_unlike_the_table_are_refused_and_nothing_lands(fresh_db: str, tmp_path: Path) -> None:
    sql(fresh_db, "CREATE TABLE people (id int NOT NULL, email text PRIMARY KEY, name text)")
    lines(
        tmp_path / "people.jsonl",
        event("c", {"id": 1}, {"id": 1, "email": "a@x", "name": "Ann"}, 10),
        event("d", {"id": 1}, None, 20),
    )
    refused = cli(tmp_path, "ingest", "--landing", "lake", "people.jsonl", "--source", plain_url(fresh_db))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "public.people: its events are keyed by (id), its description by (email)" in refused.stderr
    assert not (tmp_path / "lake" / "log" / "public.people").exists(), "nothing of it landed"

    types = tmp_path / "types.json"
    types.write_text(json.dumps({"public.people": {"key": ["id"], "columns": {
        "id": "int", "email": "text", "name": "text"}}}))  # fmt: skip
    fixed = cli(tmp_path, "ingest", "--landing", "lake", "people.jsonl", "--column-types", "types.json")
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    summary = json.loads(fixed.stdout)
    assert summary["events"] == 2 and summary["already_ingested"] == []  # the refused run marked nothing


def test_an_ingest_that_quarantined_everything_fails_and_leaves_its_input(tmp_path: Path) -> None:
    bad = lines(tmp_path / "bad.jsonl", {"value": {"op": "x"}}, {"value": {"op": "y"}})
    res = cli(tmp_path, "ingest", "--landing", "lake", "bad.jsonl")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "every one of the 2 records was quarantined" in res.stderr
    assert json.loads(res.stdout)["events"] == 0
    lines(bad, event("c", {"id": 1}, {"id": 1, "email": "a@x", "name": "Ann"}, 10))  # corrected in place
    types = tmp_path / "types.json"
    types.write_text(json.dumps({"public.people": {"key": ["id"], "columns": {
        "id": "int", "email": "text", "name": "text"}}}))  # fmt: skip
    again = cli(tmp_path, "ingest", "--landing", "lake", "bad.jsonl", "--column-types", "types.json")
    assert again.returncode == 0 and json.loads(again.stdout)["events"] == 1, again.stderr[-2000:]


def test_a_pretty_printed_document_of_events_is_ingested_as_events_parse_reads_it(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "debezium_postgres_customers_with_schema.json", tmp_path / "doc.json")
    parsed = cli(tmp_path, "events", "parse", "doc.json")
    assert parsed.returncode == 0, parsed.stderr
    n = sum(1 for line in parsed.stdout.splitlines() if line.startswith("{") and '"op":"m"' not in line)
    res = cli(tmp_path, "ingest", "--landing", "lake", "doc.json")
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads(res.stdout)
    assert summary["quarantined"] == 0 and summary["events"] == n, (summary, n)


def test_dataworks_records_are_typed_from_themselves(tmp_path: Path) -> None:
    """Each DataWorks record carries its columns' types and key (the hidden row id for a table without a
    primary key): ingested and reconciled with nothing else given."""
    shutil.copy(FIXTURES / "dataworks_kafka_no_pk.json", tmp_path / "dw.json")
    res = cli(tmp_path, "ingest", "--landing", "lake", "dw.json")
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads(res.stdout)
    assert (
        summary["quarantined"] == 0 and summary["collections"]["pkset_test.pkset_test_no_pk"]["events"] >= 4
    )
    schema = json.loads(
        (tmp_path / "lake" / "log" / "pkset_test.pkset_test_no_pk" / "_schema.json").read_text()
    )
    assert schema["key"] == ["#alibaba_rds_row_id#"]
    done = cli(tmp_path, "reconcile", "--landing", "lake", "--state", "state")
    assert done.returncode == 0, done.stderr[-2000:]
    assert (
        json.loads(done.stdout)["collections"]["pkset_test.pkset_test_no_pk"]["rows"] == 0
    )  # deleted at the end
