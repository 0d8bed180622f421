"""One reconcile run over a landing zone: which collections to read, each collection's run over the
typed log, its READ chunks and its previous state written as a new state version, and the run's
summary. What the spark-submit job, the tests and the benchmark call; the job only parses arguments and
builds the session.

The reconcile reads typed data only (docs/design.md §5.0): JSON stream files are moved into the log by
``cdc-backfill ingest`` first, and a landing zone that still holds some is refused with that command.
:func:`reconcile_job` is the job's whole run: the topics or the JSON moved into the log first, where
asked, in the same session (one JVM for both), then the reconcile.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from cdc_backfill.events.positions import position_key
from cdc_backfill.ingest.column_sources import job_sources
from cdc_backfill.ingest.rounds import Rounds
from cdc_backfill.ingest.spark.capture_kafka import capture_rounds
from cdc_backfill.ingest.spark.job import ingest_landing
from cdc_backfill.kafka.topics import Broker
from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.columns import collection_columns, landed_collections
from cdc_backfill.landing.event_log import read_schema
from cdc_backfill.landing.layout import log_schema_file, runs_dir
from cdc_backfill.landing.notifications import debezium_notes
from cdc_backfill.landing.spark.rows import (
    collection_log_files,
    log_schema,
    read_log_rows,
    signal_schema,
)
from cdc_backfill.landing.stream import unmoved_json_reason
from cdc_backfill.reconcile.debezium_snapshots import unfinished
from cdc_backfill.reconcile.runs import LandedLog, RunInput, landed_log_files, plan_run
from cdc_backfill.reconcile.signal_files import landed_signal_rows
from cdc_backfill.reconcile.spark.runs import RunFrames, read_run, reconcile_run
from cdc_backfill.reconcile.windows import SignalRow
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE
from cdc_backfill.spark.driver_frames import empty_frame
from cdc_backfill.spark.session import size_shuffle
from cdc_backfill.state.spark.frames import write_version
from cdc_backfill.state.table import StateTable, current_version

log = logging.getLogger("cdc_backfill.reconcile")


class LandingError(ValueError):
    """The landing zone cannot be reconciled as given; the message says why."""


def reconcile_job(
    spark: SparkSession,
    landing: str | Path,
    state: str | Path,
    collections: Sequence[str] | None = None,
    signal_table: str = DEFAULT_SIGNAL_TABLE,
    *,
    ingest: bool = False,
    topics: tuple[Broker, str] | None = None,
) -> dict[str, Any]:
    """The reconcile job's run (``cdc-backfill reconcile``): ``topics`` (a broker and a regex of topic
    names) read into the log first, as ``capture kafka --drain`` reads them; with ``ingest``, the
    landing's JSON stream files moved into the log first; then :func:`reconcile_landing`, whose summary
    it returns."""
    root = lake_path(landing)
    if topics is not None:
        broker, pattern = topics
        read = capture_rounds(spark, root, broker, pattern, job_sources(root, signal_table), Rounds(None))
        log.info("read %s record(s) of the topics first", read.get("records", 0))
    if ingest:
        ingested = ingest_landing(spark, root, None, job_sources(root, signal_table))
        log.info("ingested %s file(s) of the stream first", ingested.get("moved", 0))
    return reconcile_landing(spark, landing, state, collections, signal_table)


def reconcile_landing(
    spark: SparkSession,
    landing: str | Path,
    state: str | Path,
    collections: Sequence[str] | None = None,
    signal_table: str = DEFAULT_SIGNAL_TABLE,
    parallel: int = 2,
) -> dict[str, Any]:
    """Reconcile every collection of the landing zone (or the given ones) into a new state version, and
    return the run's summary (also written to ``<state>/_runs/``), ``parallel`` collections at a time.
    Each collection's state is a Delta table (``cdc_backfill.state.table``).
    Raises LandingError when there is no landing zone, or when it holds JSON stream files not moved
    into the log yet."""
    landing, state_dir = lake_path(landing), lake_path(state)
    started = time.time()
    runs = planned_runs(landing, state_dir, collections, signal_table)
    # the roll manifests after a position: read once for all collections whose state is there
    manifests: dict[tuple[int, ...] | None, LandedLog] = {}
    for r, _, _ in runs:
        if r.meta.position not in manifests:
            manifests[r.meta.position] = landed_log_files(landing, r.meta.position)
    size_shuffle(spark, max((m.events for m in manifests.values()), default=0))

    def run_one(item: tuple[RunInput, Any, Any]) -> tuple[str, dict[str, Any]]:
        r, columns, key = item
        return r.collection, reconcile_one(
            spark, landing, state_dir, r, columns, key, manifests[r.meta.position], signal_table
        )  # fmt: skip

    summary: dict[str, Any] = {"events": 0, "collections": {}}
    # Collections run side by side (``parallel`` at a time): a small run's time is mostly the driver
    # planning each Spark job, which one collection's planning can overlap with another's tasks.
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(runs) or 1))) as pool:
        for coll, info in pool.map(run_one, runs):
            summary["collections"][coll] = info
    # the log's events read: the run that read the most
    summary["events"] = max((m.events for m in manifests.values()), default=0)
    # Debezium's snapshots still running, said even when none of their rows has landed (a lost worker)
    waiting = unfinished(debezium_notes(landing) or ())
    for sid, what in waiting.items():
        log.info("Debezium's snapshot %s: %s", sid, what)
    if waiting:
        summary["snapshots"] = waiting
    summary["seconds"] = round(time.time() - started, 1)
    write_run_record(state_dir, landing, summary)
    return summary


def planned_runs(
    landing: Path, state_dir: Path, collections: Sequence[str] | None, signal_table: str
) -> list[tuple[RunInput, Any, Any]]:
    """Each collection's run with its columns and key; LandingError for a landing that cannot be
    reconciled as given."""
    if not landing.is_dir():
        raise LandingError(
            f"no landing zone at {landing}: give the folder the capture and snapshots write to"
        )
    unmoved = unmoved_json_reason(landing, signal_table)
    if unmoved:
        raise LandingError(unmoved)
    names = list(collections) if collections else landed_collections(landing, signal_table)
    untyped, runs = [], []
    for coll in names:
        try:
            columns, key = collection_columns(landing, coll)
        except FileNotFoundError:
            untyped.append(coll)
            continue
        previous = current_version(state_dir, coll)
        runs.append((plan_run(landing, coll, previous), columns, key))
    if untyped:
        # only a collection asked for by name can be unknown: the landing's own are all described
        raise LandingError(
            f"nothing in {landing} holds {', '.join(untyped)}: no log, no snapshot chunk (check the "
            "names: schema.table, as the capture lands them)"
        )
    if not runs:
        log.info("nothing to reconcile: no log and no snapshot chunks in %s", landing)
    return runs


def reconcile_one(
    spark: SparkSession,
    landing: Path,
    state_dir: Path,
    r: RunInput,
    columns: Any,
    key: Any,
    landed: LandedLog,
    signal_table: str,
) -> dict[str, Any]:
    """One collection's run, committed as its next state version; its summary."""
    t0 = time.time()
    log.info("%s: %d READ chunks; judging READs and merging", r.collection, len(r.chunks))
    rows = collection_rows(spark, landing, r.collection, log_schema(columns), landed.files)
    # the signal rows as a frame only where the run needs one (it reads them without Spark); checked now
    signal_files, signal_versions = described_log_files(landing, signal_table, landed.files)
    signals = partial(log_rows_frame, spark, signal_files, signal_versions, signal_schema())
    unread = landed.unread(r.meta)
    fresh = unread_rows(spark, landing, r, columns, key, signal_table, landed)
    frames = read_run(spark, r, columns, key)
    # the run's counts from the roll manifests, where they tell them: no Spark job over the new events
    totals = landed.totals(r.collection, signal_table, r.meta.position)
    result = reconcile_run(
        r, rows, signals, frames, columns, key, fresh=fresh, manifests=landed.manifests, by_file=True,
        totals=totals, read_signals=signals_reader(r, frames, signal_files),
    )  # fmt: skip
    log.info("%s: writing the state", r.collection)
    version = write_version(
        result.state, state_dir, r.collection, r.previous, result.info, carry=result.carry, meta=result.meta,
        replaced=result.replaced, removed=result.removed,
    )  # fmt: skip
    if result.replaced is not None:
        log.info("%s: %d of %d files rewritten, the others kept", r.collection, len(result.replaced),
                 len(r.previous.files) if r.previous else 0)  # fmt: skip
    # files of versions older than the table's retention, and any a failed run left unnamed that long
    StateTable(state_dir, r.collection).vacuum()
    info = {**result.info(), "version": version}
    changes = unread.schema_changes(r.collection)
    if changes:  # DataWorks' DDL records landed since the previous version: their columns come with the rows
        info["schema_changes"] = changes
    log.info("%s: done in %.1f s: %s rows, %s events applied, READs %s applied / %s dropped / %s waiting",
             r.collection, time.time() - t0, f"{info['rows']:,}", f"{info['events_applied']:,}", f"{info['reads_applied']:,}",
             f"{info['reads_dropped']:,}", f"{info['reads_waiting']:,}")  # fmt: skip
    if info["reads_waiting"]:
        log.info("%s: %s READ rows wait for the stream to pass their chunks' windows: once the capture has "
                 "landed it (a drain, or the next roll of a capture that follows), the next reconcile applies "
                 "them", r.collection, f"{info['reads_waiting']:,}")  # fmt: skip
    for snapshot, what in info.get("snapshots", {}).items():
        log.info("%s: snapshot %s: %s", r.collection, snapshot, what)
    if info["phantoms_removed"]:
        log.info("%s: %s phantom row(s) removed", r.collection, f"{info['phantoms_removed']:,}")
    return info


def write_run_record(state_dir: Path, landing: Path, summary: dict[str, Any]) -> None:
    """The run's summary in ``<state>/_runs/``, with the landing beside it: verify finds the events
    after the state's position there."""
    out_dir = runs_dir(state_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S") + f"-{int(time.time() * 1000) % 1000:03d}"
    record = {**summary, "landing": str(landing.resolve())}
    (out_dir / f"{stamp}.json").write_text(json.dumps(record, indent=2))


def signals_reader(
    run: RunInput, frames: RunFrames, signal_files: list[Path]
) -> Callable[[], list[SignalRow]]:
    """The run's signal rows in ``signal_files`` (the signal collection's, ``described_log_files``) read
    without Spark (``reconcile.signal_files``)."""
    carried = frames.carried_signals
    after = position_key(tuple(run.meta.position)) if run.meta.position is not None else None
    return lambda: landed_signal_rows(signal_files, carried, after)


def unread_rows(
    spark: SparkSession,
    landing: Path,
    run: RunInput,
    columns: Any,
    key: Any,
    signal_table: str,
    landed: LandedLog,
) -> tuple[Any, Any] | None:
    """The rows (``landed_rows``) of the manifests of ``landed`` the state has not read, where it read some
    of them: only those can hold late events (``reconcile.spark.runs.reconcile_run``'s ``fresh``); None
    where it read none of them."""
    unread = landed.unread(run.meta)
    if len(unread.manifests) == len(landed.manifests):
        return None
    return landed_rows(spark, landing, run, columns, key, signal_table, unread.files)


def landed_rows(
    spark: SparkSession,
    landing: Path,
    run: RunInput,
    columns: Any,
    key: Any,
    signal_table: str,
    log_files: list[str],
) -> tuple[Any, Any]:
    """The collection's and the signal collection's log rows in ``log_files`` (those of rolls landed
    after the state's position); an empty frame where there are none."""
    return (
        collection_rows(spark, landing, run.collection, log_schema(columns), log_files),
        collection_rows(spark, landing, signal_table, signal_schema(), log_files),
    )


def collection_rows(
    spark: SparkSession, landing: Path, collection: str, target: Any, log_files: list[str]
) -> Any:
    """One collection's log rows in ``log_files`` as the ``target`` schema; an empty frame where there
    are none."""
    return log_rows_frame(spark, *described_log_files(landing, collection, log_files), target)


def log_rows_frame(spark: SparkSession, paths: list[Path], versions: dict[int, Any], target: Any) -> Any:
    """Log files of one collection (``described_log_files``) as rows of ``target``; an empty frame for none."""
    return read_log_rows(spark, versions, paths, target) if paths else empty_frame(spark, target)


def described_log_files(
    landing: Path, collection: str, log_files: list[str]
) -> tuple[list[Path], dict[int, Any]]:
    """One collection's files among ``log_files`` and its schema's versions; LandingError for files
    whose collection has no schema document."""
    paths = collection_log_files(landing, collection, log_files)
    if not paths:
        return [], {}
    doc = read_schema(landing, collection)
    if doc is None:
        raise LandingError(
            f"{collection}: {len(paths)} log file(s) but no {log_schema_file(landing, collection)}: the landing "
            "zone is incomplete; let the capture that wrote it run again (it rewrites what it has not confirmed)"
        )
    return paths, {v.version: v.columns for v in doc.versions}
