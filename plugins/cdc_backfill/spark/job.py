"""One reconcile run over a landing zone: which collections and stream files to read, one parse of the
new files shared by the collections that read the same ones, each collection's run written as a new
state version, the events nothing could type counted, and the run's summary. What the spark-submit
job, the tests and the benchmark call; the job only parses arguments and builds the session.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_backfill.eventlog.store import read_schema
from cdc_backfill.layout import STREAM_DIR, log_schema_file, runs_dir
from cdc_backfill.reconcile.columns import collection_columns, landed_collections
from cdc_backfill.reconcile.runs import RunInput, plan_run, stream_files
from cdc_backfill.reconcile.unapplied import (
    Unapplied,
    no_types_reason,
    read_unapplied,
    relative_stream_file,
    write_unapplied,
)
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_COLLECTION
from cdc_backfill.spark.landing import PARSED_SCHEMA, events_only
from cdc_backfill.spark.logrows import (
    STREAM_COLUMNS,
    LandedLog,
    as_log_rows,
    as_signal_rows,
    collection_log_files,
    landed_log_files,
    log_schema,
    read_log_rows,
    signal_schema,
)
from cdc_backfill.spark.runs import read_new_events, read_run, reconcile_run, untyped_counts
from cdc_backfill.spark.state import current_path, write_version

log = logging.getLogger("cdc_backfill.reconcile")


class LandingError(ValueError):
    """The landing zone cannot be reconciled as given; the message says why."""


def reconcile_landing(
    spark: SparkSession,
    landing: str | Path,
    state: str | Path,
    collections: Sequence[str] | None = None,
    signal_collection: str = DEFAULT_SIGNAL_COLLECTION,
    keep_versions: int = 3,
) -> dict[str, Any]:
    """Reconcile every collection of the landing zone (or the given ones) into a new state version, and
    return the run's summary (also written to ``<state>/_runs/``). Raises LandingError when there is
    no landing zone; events of collections nothing types are counted in ``unapplied``."""
    landing, state_dir = Path(landing), Path(state)
    if not landing.is_dir():
        raise LandingError(
            f"no landing zone at {landing}: give the folder the capture and snapshots write to"
        )
    started = time.time()
    files = stream_files(landing)
    scope = list(collections) if collections else None
    runs, untyped = [], set()
    for coll in scope or landed_collections(landing, signal_collection):
        try:
            columns, key = collection_columns(landing, coll)
        except FileNotFoundError:
            untyped.add(coll)
            continue
        runs.append((plan_run(landing, coll, current_path(state_dir, coll), files), columns, key))
    if not files and not runs:
        log.info("nothing to reconcile: no stream files and no snapshot chunks in %s", landing)
    # Events of collections nothing types are counted once per stream file (scoped runs do not keep
    # the record: they counted only their own collections).
    record = read_unapplied(state_dir) if scope is None else Unapplied()
    unchecked = [f for f in files if f not in record.checked]
    typed = [r.collection for r, _, _ in runs]
    # collections that have read the same files share one parse of the new ones (the usual case: all)
    groups: dict[tuple[str, ...], list[tuple[RunInput, Any, Any]]] = defaultdict(list)
    for item in runs:
        groups[item[0].new_files].append(item)
    rest = tuple(sorted(set(unchecked) - {f for g in groups for f in g}))
    if rest and (scope is None or untyped):
        groups[rest] = groups.get(rest, [])
    summary: dict[str, Any] = {"events": 0, "quarantined": 0, "stream_files": len(files), "collections": {}}
    counts: dict[str, int] = defaultdict(int)
    manifests: dict[tuple[int, ...] | None, LandedLog] = {}
    for new_files, group in groups.items():
        if new_files:
            log.info("reading %d new stream files", len(new_files))
        # Stored once, and every collection's run filters its events from it. A local checkpoint and
        # not a cache: it also cuts the parse's large plan away, which every later query would
        # otherwise analyse again (about 5 s per run on a small stream). Only the columns the rules
        # read are stored (not ``before``: a third of a line). Its blocks are freed when the frame is
        # gone (Spark's context cleaner).
        if new_files:
            parsed = read_new_events(spark, landing, new_files).select(*STREAM_COLUMNS, "quarantine_reason")
            parsed = parsed.localCheckpoint()
            events = events_only(parsed, STREAM_COLUMNS)
            totals = parsed.agg(
                F.count_if(F.col("quarantine_reason").isNull()).alias("events"),
                F.count_if(F.col("quarantine_reason").isNotNull()).alias("quarantined"),
            ).first()
            summary["events"] = max(summary["events"], totals["events"])
            summary["quarantined"] = max(summary["quarantined"], totals["quarantined"])
            log.info(
                "%s events parsed, %s quarantined", f"{totals['events']:,}", f"{totals['quarantined']:,}"
            )
            if set(new_files) & set(unchecked):
                for file, coll, n in untyped_counts(parsed, [*typed, signal_collection], scope):
                    if relative_stream_file(file, STREAM_DIR) in unchecked:
                        counts[coll] += n
        else:
            # no JSON to read (a typed log landing, or nothing new): no parse, no Spark job
            parsed, events = None, spark.createDataFrame([], no_events_schema())
        for r, columns, key in group:
            t0 = time.time()
            log.info("%s: %d new stream files, %d READ chunks; judging READs and merging",
                     r.collection, len(r.new_files), len(r.chunks))  # fmt: skip
            # the roll manifests after a position: read once for all collections whose state is there
            since = r.meta.position
            if since not in manifests:
                manifests[since] = landed_log_files(landing, since)
            rows, signals = run_rows(
                spark, landing, r, events, columns, key, signal_collection, manifests[since].files
            )
            frames = read_run(spark, r, columns, key, signal_collection)
            result = reconcile_run(r, rows, signals, frames, columns, key)
            info = result.info
            log.info("%s: writing %s rows", r.collection, f"{info['rows']:,}")
            write_version(
                result.state, state_dir, r.collection, info, keep=keep_versions,
                carry=result.carry, meta=result.meta,
            )  # fmt: skip
            summary["collections"][r.collection] = info
            log.info("%s: done in %.1f s: %s events applied, READs %s applied / %s dropped / %s waiting",
                     r.collection, time.time() - t0, f"{info['events_applied']:,}", f"{info['reads_applied']:,}",
                     f"{info['reads_dropped']:,}", f"{info['reads_waiting']:,}")  # fmt: skip
            # released before the next collection: in a long-lived session they would fill the memory
            result.release()
        del parsed, events
    # the log's events read (the JSON's are counted at the parse): the run that read the most
    summary["events"] += max((m.events for m in manifests.values()), default=0)
    if scope is None:
        record = record.updated(unchecked, counts, typed)
        if record != read_unapplied(state_dir):
            write_unapplied(state_dir, record)
        unapplied = dict(record.events)
    else:
        unapplied = dict(counts)
        unapplied.update({c: unapplied.get(c, 0) for c in untyped})
    summary["events_unapplied"] = sum(unapplied.values())
    summary["unapplied"] = {
        c: {"events": n, "reason": no_types_reason(landing, c)} for c, n in sorted(unapplied.items())
    }
    for coll, item in summary["unapplied"].items():
        log.error("%s: %s events not applied: %s", coll, f"{item['events']:,}", item["reason"])
    summary["seconds"] = round(time.time() - started, 1)
    out_dir = runs_dir(state_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S") + f"-{int(time.time() * 1000) % 1000:03d}"
    (out_dir / f"{stamp}.json").write_text(json.dumps(summary, indent=2))
    return summary


def no_events_schema() -> T.StructType:
    """The parsed events' columns the rules read, for a run with no JSON to parse."""
    return T.StructType([PARSED_SCHEMA[c] for c in STREAM_COLUMNS])


def run_rows(
    spark: SparkSession,
    landing: Path,
    run: RunInput,
    events: Any,
    columns: Any,
    key: Any,
    signal_collection: str,
    log_files: list[str],
) -> tuple[Any, Any]:
    """The collection's and the signal collection's new log rows: from the new JSON stream files'
    events, and from ``log_files`` (those of rolls landed after the state's position)."""
    rows = as_log_rows(events, run.collection, columns, key)
    signals = as_signal_rows(events, signal_collection)
    for coll, target in ((run.collection, log_schema(columns)), (signal_collection, signal_schema())):
        paths = collection_log_files(landing, coll, log_files)
        if not paths:
            continue
        doc = read_schema(landing, coll)
        if doc is None:
            raise LandingError(
                f"{coll}: {len(paths)} log file(s) but no {log_schema_file(landing, coll)}: the landing zone "
                "is incomplete; let the capture that wrote it run again (it rewrites what it has not confirmed)"
            )
        logged = read_log_rows(spark, {v.version: v.columns for v in doc.versions}, paths, target)
        if coll == run.collection:
            rows = rows.unionByName(logged)
        else:
            signals = signals.unionByName(logged)
    return rows, signals
