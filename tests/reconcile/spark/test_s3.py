"""The reconcile with the lake on S3 (moto's server, a real process): the landing read and the state
committed there, the same rows as on local disk, and a small run rewriting only its files there too."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_backfill.lakepath import S3Path
from cdc_backfill.reconcile.spark.job import reconcile_landing
from cdc_backfill.state.table import StateTable, current_version
from tests.support.records import capture_changes
from tests.support.runs import ingest_and_reconcile, land_snapshot_of
from tests.support.s3 import upload
from tests.support.scripts import ENCODERS, Script, records, write_chunk, write_stream_file
from tests.support.state import state_frame, state_table

pytestmark = pytest.mark.spark
ENC = ENCODERS["debezium-postgresql"]


def rows_of(table) -> dict[int, tuple]:  # type: ignore[no-untyped-def]
    return {r["id"]: (r["v"], r["big"]) for r in table}


def test_a_lake_on_s3_reconciles_as_on_local_disk(s3_spark, s3_lake: S3Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    spark = s3_spark
    s = Script()
    s.seed(*range(1, 101))
    s.open("c1")
    s.read("c1", *range(1, 101))
    s.update(3, "during")  # inside the window: its READ row is dropped
    s.close("c1")
    s.delete(4)
    local, local_state = tmp_path / "landing", tmp_path / "state"
    write_stream_file(local, "1.jsonl", [r for _, r in records(s, ENC)])
    write_chunk(local, ENC.collection, "c1", s.reads["c1"])
    on_disk = ingest_and_reconcile(spark, local, local_state, ENC)  # the stream files now in the log

    landing, state = s3_lake / "landing", s3_lake / "state"
    upload(local, landing)
    summary = reconcile_landing(spark, str(landing), str(state), [ENC.collection], ENC.signal)
    info = summary["collections"][ENC.collection]
    assert {k: info[k] for k in ("rows", "reads_applied", "reads_dropped")} == {
        k: on_disk[k] for k in ("rows", "reads_applied", "reads_dropped")
    }
    version = current_version(state, ENC.collection)
    assert version is not None and all(f.startswith(f"{state}/") for f in version.files)
    want = rows_of(state_frame(spark, local_state, ENC.collection).collect())
    assert (
        rows_of(state_frame(spark, state, ENC.collection).collect())
        == want
        == {k: (r["v"], r["big"]) for k, r in s.truth.items()}
    )
    assert rows_of(state_table(state, ENC.collection).to_pylist()) == want  # pyarrow, no Spark
    assert [h["version"] for h in StateTable(state, ENC.collection).history()] == [0]
    assert (state / "_runs").is_dir() and not list(Path(tmp_path).glob("**/s3:*"))


def test_ingest_and_a_small_run_on_s3(s3_spark, s3_lake: S3Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """JSON stream files landed on S3 are ingested there (lock, staging, named log files, manifest,
    the files moved out of stream/), and a later small run rewrites only the files of its keys."""
    spark = s3_spark
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")  # a state of several files
    try:
        local = tmp_path / "landing"
        s = land_snapshot_of(200, ENC, local)
        landing, state = s3_lake / "landing", s3_lake / "state"
        upload(local, landing)
        assert ingest_and_reconcile(spark, landing, state, ENC)["rows"] == 200
        assert not list((landing / "stream").iterdir()) and (landing / "_ingested" / "stream").is_dir()
        first = current_version(state, ENC.collection)
        assert first is not None and len(first.files) > 2

        done = len(s.changes)
        s.update(7, "changed")
        s.change_key(9, 1009)
        s.insert(5000, "new")
        later = tmp_path / "later"
        write_stream_file(later, "2.jsonl", [r for n, r in records(s, ENC) if n > done])
        upload(later, landing)
        info = ingest_and_reconcile(spark, landing, state, ENC)
        second = current_version(state, ENC.collection)
        assert second is not None and info["rows"] == 201
        kept = set(first.files) & set(second.files)
        assert kept and len(first.files) - len(kept) <= 3, (first.files, second.files)
        want = {k: (r["v"], r["big"]) for k, r in s.truth.items()}
        assert rows_of(state_table(state, ENC.collection).to_pylist()) == want
        assert not (landing / "log" / ".ingest.lock").exists()  # the S3 lock is given back
    finally:
        spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")


def test_an_ingest_typed_by_the_parse_workers_lands_on_s3(
    s3_spark, s3_lake: S3Path, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """The parse's workers write the log files they typed into the staging folder on S3, and the ingest
    names them there: the log rows a local ingest typed by the JVM lands."""
    from cdc_backfill.ingest.column_sources import ColumnSources
    from cdc_backfill.ingest.spark import job
    from cdc_backfill.lakepath import read_parquet
    from cdc_backfill.landing.event_log import log_files
    from cdc_backfill.pgtypes import PgColumn

    columns = [PgColumn("id", "bigint", 20), PgColumn("name", "text", 25), PgColumn("balance", "numeric(12,2)", 1700),
               PgColumn("active", "boolean", 16), PgColumn("score", "double precision", 701)]  # fmt: skip
    given = {"public.t": (columns, ["id"])}
    local = tmp_path / "landing"
    write_stream_file(local, "a.jsonl", capture_changes(300, 1))
    landing = s3_lake / "typed"
    upload(local, landing)
    landed = {}
    for where, least in ((local, 10**9), (landing, 1)):
        monkeypatch.setattr(job, "TYPED_MIN_EVENTS", least)
        summary = job.ingest_landing(s3_spark, where, None, ColumnSources(where, ENC.signal, None, given))
        assert summary["typed_in_parse"] == (summary["events"] if least == 1 else 0)
        rows = [
            r
            for f in log_files(where, "public.t")
            for r in read_parquet(f).drop_columns(["_cdc_origin"]).to_pylist()
        ]
        landed[where == landing] = sorted(rows, key=lambda r: r["_cdc_position"])
    assert landed[True] == landed[False] and len(landed[True]) > 300
