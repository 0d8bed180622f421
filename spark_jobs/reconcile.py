"""spark-submit entry point: reconcile landed stream events and READ chunks into versioned states.

Thin: parse arguments, build the session, read, call cdc_backfill.spark.runs, write. Each run reads
only the stream files and READ chunks the collection's current state has not consumed, plus the carry
that state left (see cdc_backfill.reconcile.runs).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from cdc_backfill.reconcile.columns import collection_columns, landed_collections
from cdc_backfill.reconcile.runs import RunInput, plan_run, stream_files
from cdc_backfill.spark.landing import events_only
from cdc_backfill.spark.reconcile import STREAM_COLUMNS
from cdc_backfill.spark.runs import read_new_events, read_run, reconcile_run
from cdc_backfill.spark.session import build_session
from cdc_backfill.spark.state import current_path, write_version

log = logging.getLogger("cdc_backfill.reconcile")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--landing", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--collections", nargs="*")
    ap.add_argument("--signal-collection", default="public.cdc_signal")
    ap.add_argument("--keep-versions", type=int, default=3)
    return ap.parse_args(argv)


def run(spark: SparkSession, args: argparse.Namespace) -> dict[str, Any]:
    landing, state_dir = Path(args.landing), Path(args.state)
    started = time.time()
    files = stream_files(landing)
    runs = [
        plan_run(landing, coll, current_path(state_dir, coll), files)
        for coll in args.collections or landed_collections(landing, args.signal_collection)
    ]
    # collections that have read the same files share one parse of the new ones (the usual case: all)
    groups: dict[tuple[str, ...], list[RunInput]] = defaultdict(list)
    for r in runs:
        groups[r.new_files].append(r)
    summary: dict[str, Any] = {"events": 0, "quarantined": 0, "stream_files": len(files), "collections": {}}
    for new_files, group in groups.items():
        # Stored once, and every collection's run filters its events from it. A local checkpoint and
        # not a cache: it also cuts the parse's large plan away, which every later query would
        # otherwise analyse again (about 5 s per run on a small stream). Only the columns the rules
        # read are stored (not ``before``: a third of a line). Its blocks are freed when the frame is
        # gone (Spark's context cleaner).
        parsed = read_new_events(spark, landing, new_files).select(*STREAM_COLUMNS, "quarantine_reason")
        parsed = parsed.localCheckpoint()
        events = events_only(parsed, STREAM_COLUMNS)
        counts = parsed.agg(
            F.count_if(F.col("quarantine_reason").isNull()).alias("events"),
            F.count_if(F.col("quarantine_reason").isNotNull()).alias("quarantined"),
        ).first()
        summary["events"] = max(summary["events"], counts["events"])
        summary["quarantined"] = max(summary["quarantined"], counts["quarantined"])
        for r in group:
            try:
                columns, key = collection_columns(landing, r.collection)
            except FileNotFoundError as exc:
                # no chunk and no schema yet: nothing types its rows; its files stay unread for it
                log.warning("%s: skipped: %s", r.collection, exc)
                summary["collections"][r.collection] = {"skipped": str(exc)}
                continue
            result = reconcile_run(
                r, events, read_run(spark, r, events.schema), columns, key, args.signal_collection
            )
            write_version(
                result.state, state_dir, r.collection, result.info, keep=args.keep_versions,
                carry=result.carry, meta=result.meta,
            )  # fmt: skip
            summary["collections"][r.collection] = result.info
            # released before the next collection: in a long-lived session they would fill the memory
            result.release()
        del parsed, events
    summary["seconds"] = round(time.time() - started, 1)
    out_dir = state_dir / "_runs"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S") + f"-{int(time.time() * 1000) % 1000:03d}"
    (out_dir / f"{stamp}.json").write_text(json.dumps(summary, indent=2))
    return summary


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    spark = build_session("cdc_backfill_reconcile")
    summary = run(spark, args)
    print(json.dumps(summary))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
