"""Reconcile runs over scripted landings, in the test session's Spark: what several tests share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.scripts import Encoder, Script, records, write_chunk, write_stream_file


def reconcile_here(
    spark: Any, landing: Path, state: Path, collections: list[str] | None = None, *, ingest: bool = False
) -> dict[str, Any]:
    """What ``cdc-backfill reconcile --landing LANDING --state STATE`` (with ``ingest``: ``--ingest``)
    runs, in the test session's Spark instead of a JVM of its own: the run's summary."""
    from cdc_backfill.reconcile.spark.job import reconcile_job

    return reconcile_job(spark, landing, state, collections, ingest=ingest)


def ingest_here(spark: Any, landing: Path) -> dict[str, Any]:
    """What ``cdc-backfill ingest --landing LANDING`` runs, in the test session's Spark: its summary;
    fails where nothing landed (where the command exits 1)."""
    from cdc_backfill.ingest.column_sources import job_sources
    from cdc_backfill.ingest.spark.job import ingest_landing
    from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE

    summary = ingest_landing(spark, landing, None, job_sources(landing, DEFAULT_SIGNAL_TABLE))
    assert not summary.get("nothing_landed"), summary
    return summary


def ingest_and_reconcile(spark: Any, landing: Path, state: Path, enc: Encoder) -> dict[str, Any]:
    """What a user runs: the new stream files into the log (``ingest``), then the reconcile; the
    collection's run summary."""
    from cdc_backfill.ingest.column_sources import ColumnSources
    from cdc_backfill.ingest.spark.job import ingest_landing
    from cdc_backfill.reconcile.spark.job import reconcile_landing

    ingest_landing(spark, landing, None, ColumnSources(landing, enc.signal))
    summary = reconcile_landing(spark, landing, state, [enc.collection], enc.signal)
    return summary["collections"][enc.collection]


def land_first_half(script: Script, enc: Encoder, landing: Path) -> list[dict[str, Any] | None]:
    """The first half of the script's stream and all its READ chunks landed; the second half's records."""
    recs = [r for _, r in records(script, enc)]
    half = len(recs) // 2
    write_stream_file(landing, "1.jsonl", recs[:half])
    for chunk, rows in script.reads.items():
        write_chunk(landing, enc.collection, chunk, rows)
    return recs[half:]


def land_snapshot_of(keys: int, enc: Encoder, landing: Path) -> Script:
    """A source of ``keys`` rows whose snapshot read them in one window (chunk ``c1``), landed as the
    stream files and READ chunk of ``landing``; its script, for the truth and more changes."""
    s = Script()
    s.seed(*range(1, keys + 1))
    s.open("c1")
    s.read("c1", *range(1, keys + 1))
    s.close("c1")
    write_stream_file(landing, "1.jsonl", [r for _, r in records(s, enc)])
    write_chunk(landing, enc.collection, "c1", s.reads["c1"])
    return s


def assert_manifest_totals_are_sparks(spark: Any, landing: Path, collection: str, signal: str) -> None:
    """The run's totals the roll manifests give equal those Spark counts over the same log files."""
    from cdc_backfill.landing.columns import collection_columns
    from cdc_backfill.reconcile.runs import landed_log_files, plan_run
    from cdc_backfill.reconcile.spark.job import landed_rows
    from cdc_backfill.reconcile.spark.new_rows import stream_totals

    landed = landed_log_files(landing)
    given = landed.totals(collection, signal, None)
    assert given is not None, "the manifests have no counts"
    columns, key = collection_columns(landing, collection)
    rows, signals = landed_rows(
        spark, landing, plan_run(landing, collection, None), columns, key, signal, landed.files
    )
    counted = stream_totals(rows, signals, None)
    assert {**counted, "top": bytes(counted["top"])} == given
