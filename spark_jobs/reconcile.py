"""spark-submit entry point: reconcile landed stream events and READ chunks into versioned states.

Thin: parse arguments, build the session, read, call cdc_backfill.spark.reconcile, write.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pyspark.sql import functions as F

from cdc_backfill.reconcile.columns import collection_columns, landed_collections
from cdc_backfill.spark.landing import events_only, landing_events, quarantined_only
from cdc_backfill.spark.reconcile import reconcile_parts
from cdc_backfill.spark.session import build_session
from cdc_backfill.spark.state import current_path, write_version


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--landing", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--collections", nargs="*")
    ap.add_argument("--signal-collection", default="public.cdc_signal")
    ap.add_argument("--keep-versions", type=int, default=3)
    args = ap.parse_args(argv)
    landing, state_dir = Path(args.landing), Path(args.state)
    started = time.time()
    spark = build_session("cdc_backfill_reconcile")

    parsed = landing_events(spark, str(landing / "stream")).cache()
    events = events_only(parsed).cache()
    summary: dict[str, object] = {
        "events": events.count(),
        "quarantined": quarantined_only(parsed).count(),
        "collections": {},
    }
    for coll in args.collections or landed_collections(landing, args.signal_collection):
        columns, key = collection_columns(landing, coll)
        chunks = landing / "snapshots" / coll
        reads = spark.read.parquet(str(chunks)) if list(chunks.glob("*.parquet")) else None
        current = current_path(state_dir, coll)
        previous = spark.read.parquet(str(current)) if current else None
        parts = reconcile_parts(events, reads, coll, columns, key, args.signal_collection, previous)
        state = parts.state.cache()
        rows = state.count()
        reads_total = reads.count() if reads is not None else 0
        kept = parts.kept.count() if parts.kept is not None else 0
        dropped = parts.dropped.count() if parts.dropped is not None else 0
        counts = {
            "events_applied": parts.stream.count(),
            "deletes": parts.stream.where("_cdc_deleted").count(),
            "reads": reads_total,
            "reads_applied": kept,
            "reads_dropped": dropped,
            "reads_waiting": reads_total - kept - dropped,  # their window has not closed in the stream yet
            "keys_removed_since_previous": previous.join(state, key, "left_anti").count() if previous else 0,
        }
        position = (
            events.where(F.col("collection").isin(coll, args.signal_collection))
            .agg(F.max("position"))
            .first()[0]
        )
        info = {"rows": rows, "position": [int(p) for p in position] if position else None, **counts}
        # _cdc_position stays: the position each row is as of, and where the next run starts from
        write_version(state, state_dir, coll, info, keep=args.keep_versions)
        summary["collections"][coll] = info  # type: ignore[index]
        state.unpersist()
    summary["seconds"] = round(time.time() - started, 1)
    runs = state_dir / "_runs"
    runs.mkdir(parents=True, exist_ok=True)
    (runs / f"{time.strftime('%Y%m%dT%H%M%S')}.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
