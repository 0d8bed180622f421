"""spark-submit entry point: reconcile landed stream events and READ chunks into versioned states.

Thin: parse arguments, build the session, read, call cdc_backfill.spark.reconcile, write. Each run
reads only the stream files and READ chunks the collection's current state has not consumed, plus the
carry that state left (see cdc_backfill.reconcile.runs).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdc_backfill.reconcile.columns import collection_columns, landed_collections
from cdc_backfill.reconcile.runs import STREAM_DIR, RunInput, next_meta, plan_run, stream_files
from cdc_backfill.spark.landing import events_only, parse_landing_files, quarantined_only
from cdc_backfill.spark.reconcile import after_position, carry, pending_windows, reconcile_parts
from cdc_backfill.spark.session import build_session
from cdc_backfill.spark.state import current_path, write_version


def read_events(spark: SparkSession, landing: Path, files: tuple[str, ...]) -> DataFrame:
    paths = [str(landing / STREAM_DIR / f) for f in files]
    raw = spark.read.format("binaryFile").load(paths) if paths else None
    if raw is None:
        return spark.createDataFrame([], "path string, content binary").transform(parse_landing_files)
    return parse_landing_files(raw)


def run_collection(
    spark: SparkSession, run: RunInput, parsed_events: DataFrame, landing: Path, args: argparse.Namespace
) -> tuple[DataFrame, DataFrame, dict[str, object]]:
    coll, sig = run.collection, args.signal_collection
    columns, key = collection_columns(landing, coll)
    new = after_position(parsed_events, run.meta.position)
    late = parsed_events.count() - new.count() if run.meta.position is not None else 0
    events = new
    if run.carry is not None:
        events = events.unionByName(spark.read.schema(new.schema).parquet(str(run.carry)))
    events = events.cache()
    reads = spark.read.parquet(*map(str, run.chunks)) if run.chunks else None
    previous = spark.read.parquet(str(run.previous)) if run.previous else None
    parts = reconcile_parts(events, reads, coll, columns, key, sig, previous)
    closed = parts.windows.where(F.col("_cdc_high").isNotNull()).select("_cdc_chunk_id")
    applied_now = (
        [r[0] for r in reads.select("_cdc_chunk_id").distinct().join(closed, "_cdc_chunk_id").collect()]
        if reads is not None
        else []
    )
    top = new.agg(F.max("position")).first()[0]
    meta = next_meta(run, applied_now, [int(p) for p in top] if top is not None else None)
    applied = spark.createDataFrame([(c,) for c in meta.applied], "_cdc_chunk_id string")
    pending = pending_windows(parts.windows, coll, applied)
    state = parts.state.cache()
    own = new.where((F.col("collection") == coll) & F.col("op").isin("c", "u", "d", "r"))
    reads_total = reads.count() if reads is not None else 0
    kept = parts.kept.count() if parts.kept is not None else 0
    dropped = parts.dropped.count() if parts.dropped is not None else 0
    info: dict[str, object] = {
        "rows": state.count(),
        "position": list(meta.position) if meta.position is not None else None,
        "stream_files_read": len(run.new_files),
        "events_applied": own.count(),
        "deletes": own.where(F.col("after").isNull()).count(),
        "late_events_ignored": late,  # at or before the previous state's position: already in it
        "reads": reads_total,
        "reads_applied": kept,
        "reads_dropped": dropped,
        "reads_waiting": reads_total - kept - dropped,  # their window has not closed in the stream yet
        "windows_pending": pending.count(),
        "keys_removed_since_previous": previous.join(state, key, "left_anti").count() if previous else 0,
    }
    return state, carry(events, pending, coll, sig), {"info": info, "meta": meta.to_json()}


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

    files = stream_files(landing)
    runs = [
        plan_run(landing, coll, current_path(state_dir, coll), files)
        for coll in args.collections or landed_collections(landing, args.signal_collection)
    ]
    # collections that have read the same files share one parse of the new ones (the usual case: all)
    groups: dict[tuple[str, ...], list[RunInput]] = defaultdict(list)
    for run in runs:
        groups[run.new_files].append(run)
    summary: dict[str, object] = {
        "events": 0,
        "quarantined": 0,
        "stream_files": len(files),
        "collections": {},
    }
    for new_files, group in groups.items():
        parsed = read_events(spark, landing, new_files).cache()
        events = events_only(parsed).cache()
        summary["events"] = max(int(summary["events"]), events.count())  # type: ignore[call-overload]
        summary["quarantined"] = max(int(summary["quarantined"]), quarantined_only(parsed).count())  # type: ignore[call-overload]
        for run in group:
            state, carry_next, out = run_collection(spark, run, events, landing, args)
            # _cdc_position stays: the position each row is as of, and where the next run starts from
            write_version(
                state, state_dir, run.collection, out["info"], keep=args.keep_versions,
                carry=carry_next, meta=out["meta"],
            )  # fmt: skip
            summary["collections"][run.collection] = out["info"]  # type: ignore[index]
            state.unpersist()
        parsed.unpersist()
    summary["seconds"] = round(time.time() - started, 1)
    out_dir = state_dir / "_runs"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S") + f"-{int(time.time() * 1000) % 1000:03d}"
    (out_dir / f"{stamp}.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
