"""``cdc-backfill ingest`` as a user types it: a sink's JSON landing moved into the log and reconciled to
the source's truth, as the reconcile's refusal prints it; a Kafka sink's files typed from the source's
catalog; a typo refused in one line."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from cdc_backfill.landing.event_log import log_files
from cdc_backfill.landing.layout import ingested_stream_dir, stream_dir
from cdc_backfill.reconcile.spark.job import reconcile_landing
from tests.support.cli import cli
from tests.support.pg import plain_url, sql
from tests.support.scripts import ENCODERS, Script, every_rule, records, write_chunk, write_stream_file
from tests.support.state import state_frame

pytestmark = [pytest.mark.spark, pytest.mark.pg, pytest.mark.slow]

ENC = ENCODERS["debezium-postgresql"]


def _json_landing(landing: Path) -> Script:
    """A Debezium sink's JSON files of every rule's history (two files) and its snapshot's READ chunks;
    the script, for the truth."""
    s = every_rule(ENC)
    recs = [r for _, r in records(s, ENC)]
    write_stream_file(landing, "1.jsonl", recs[: len(recs) // 2])
    write_stream_file(landing, "2.jsonl", recs[len(recs) // 2 :])
    for chunk, rows in s.reads.items():
        write_chunk(landing, ENC.collection, chunk, rows)
    return s


def _truth(spark, state: Path, s: Script) -> None:  # type: ignore[no-untyped-def]
    got = {r["id"]: (r["v"], r["big"]) for r in state_frame(spark, state, ENC.collection).collect()}
    assert got == {k: (r["v"], r["big"]) for k, r in s.truth.items()}


def test_a_json_landing_is_moved_into_the_log_and_reconciles_to_the_source(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    landing = tmp_path / "lake"
    s = _json_landing(landing)
    files = sorted(p.name for p in stream_dir(landing).iterdir())
    # the reconcile refuses JSON, in one line, with the command that moves it
    rec = ("reconcile", "--landing", "lake", "--state", "state", "--signal-table", ENC.signal)
    refused = cli(tmp_path, *rec)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"holds {len(files)} JSON stream file(s)" in refused.stderr and "--ingest" in refused.stderr
    assert not (tmp_path / "state").exists()
    printed = shlex.split(refused.stderr.split("`")[1])
    assert printed[:1] == ["cdc-backfill"]
    done = cli(tmp_path, *printed[1:])  # as printed
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["files"] == len(files) and summary["quarantined"] == 0 and summary["moved"] == len(files)
    assert sorted(p.name for p in ingested_stream_dir(landing).iterdir()) == files
    assert not list(stream_dir(landing).iterdir())
    again = cli(tmp_path, "ingest", "--landing", "lake", "--master", "local[2]")
    assert again.returncode == 0 and json.loads(again.stdout)["files"] == 0
    run = reconcile_landing(spark, landing, tmp_path / "state", signal_table=ENC.signal)
    assert run["collections"][ENC.collection]["reads_dropped"] > 0
    _truth(spark, tmp_path / "state", s)


def test_reconcile_with_ingest_moves_a_json_landing_and_reconciles_it_in_one_job(
    spark, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    landing = tmp_path / "lake"
    s = _json_landing(landing)
    files = sorted(p.name for p in stream_dir(landing).iterdir())
    rec = ("reconcile", "--landing", "lake", "--state", "state", "--ingest", "--master", "local[2]",
           "--signal-table", ENC.signal)  # fmt: skip
    done = cli(tmp_path, *rec)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert sorted(p.name for p in ingested_stream_dir(landing).iterdir()) == files
    _truth(spark, tmp_path / "state", s)
    # a sink's file being written (a hidden name) is nothing to ingest: nothing new, no Spark
    (stream_dir(landing) / ".cdc-0001.part").write_text('{"partial": ')
    again = cli(tmp_path, *rec)
    assert again.returncode == 0 and json.loads(again.stdout)["nothing_new"], again.stderr


def test_a_sinks_files_are_typed_from_the_catalog(fresh_db: str, tmp_path: Path) -> None:
    sql(fresh_db, "CREATE TABLE items (sku text PRIMARY KEY, price numeric(10,2), added date)")
    envelope = {"before": None, "after": {"sku": "a-1", "price": "9.90", "added": 19000},
                "source": {"connector": "postgresql", "schema": "public", "table": "items", "lsn": 500,
                           "sequence": '["400","500"]', "ts_ms": 1}, "op": "c", "ts_ms": 2}  # fmt: skip
    topics = tmp_path / "topics" / "shop.public.items"
    topics.mkdir(parents=True)
    (topics / "part-0.json").write_text(json.dumps(envelope) + "\n")  # no Kafka key: the catalog gives it
    done = cli(tmp_path, "ingest", "--landing", "lake", "topics", "--source", plain_url(fresh_db),
               "--master", "local[1]")  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert json.loads(done.stdout)["collections"]["public.items"]["events"] == 1
    import pyarrow.parquet as pq

    (path,) = log_files(tmp_path / "lake", "public.items")
    (row,) = pq.read_table(path).to_pylist()
    assert (row["sku"], str(row["price"]), row["added"].isoformat()) == ("a-1", "9.90", "2022-01-08")


def test_typos_are_refused_in_one_line(tmp_path: Path) -> None:
    missing = cli(tmp_path, "ingest", "--landing", "lake", "events.jsonl")
    assert missing.returncode == 2
    assert missing.stderr.strip() == "cdc-backfill ingest: no such file or folder: events.jsonl"
    (tmp_path / "events.jsonl").write_text("{}\n")
    (tmp_path / "types.json").write_text('{"public.t": {"key": ["id"], "columns": {"id": "bigitn"}}}')
    bad = cli(tmp_path, "ingest", "--landing", "lake", "events.jsonl", "--column-types", "types.json")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip() == (
        "cdc-backfill ingest: types.json: public.t.id: unknown type 'bigitn'; use PostgreSQL type names "
        "(bigint, numeric(12,2), text, timestamptz, boolean, date, bytea, ...)"
    )


def test_a_file_nothing_types_is_refused_before_spark_starts(tmp_path: Path) -> None:
    """No catalog, no column-type file, no wrapper: refused from the file's first records, in the job's
    words (a master no Spark could reach shows that none started), and nothing is written."""
    record = {"key": {"id": 1}, "value": {"before": None, "after": {"id": 1, "name": "Ann"}, "op": "c",
              "source": {"connector": "postgresql", "schema": "public", "table": "people", "lsn": 10}}}  # fmt: skip
    (tmp_path / "people.jsonl").write_text(json.dumps(record) + "\n")
    res = cli(tmp_path, "ingest", "--landing", "lake", "people.jsonl", "--master", "spark://127.0.0.1:1")
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip() == (
        "cdc-backfill ingest: no column types for public.people: give --source URL (its catalog), or "
        "--column-types FILE naming each one's key and columns (docs/guides/debezium-and-kafka.md, Ingest); nothing was ingested"
    )
    assert not (tmp_path / "lake" / "log").exists()
