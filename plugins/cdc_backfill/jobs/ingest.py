"""spark-submit entry point: files of change events into the landing zone's typed event log.

Thin: parse arguments, build the session, call ``cdc_backfill.ingest.spark.job.ingest_landing``, print its
summary. The source, when the CLI was given one, comes in ``CDC_BACKFILL_SOURCE_URL`` (not on the command
line, where ``ps`` would show its password).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from cdc_backfill.config import resolve_source
from cdc_backfill.ingest.column_sources import ColumnsError, job_sources
from cdc_backfill.ingest.spark.job import ingest_landing
from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.stream import InputError
from cdc_backfill.logs import setup_logging
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE
from cdc_backfill.spark.session import build_session

log = logging.getLogger("cdc_backfill.ingest")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--landing", required=True)
    ap.add_argument("inputs", nargs="*", type=lake_path)
    ap.add_argument("--catalog", action="store_true", help="type collections from the source's catalog")
    ap.add_argument("--column-types", type=Path)
    ap.add_argument("--signal-table", default=DEFAULT_SIGNAL_TABLE)
    ap.add_argument("-v", "--verbose", action="store_true")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.verbose)
    landing = lake_path(args.landing)
    try:
        setting = resolve_source() if args.catalog else None
        sources = job_sources(landing, args.signal_table, setting and setting.url, args.column_types)
    except ColumnsError as exc:
        log.error("%s", exc)
        return 2
    spark = build_session("cdc_backfill_ingest")
    try:
        summary = ingest_landing(spark, landing, args.inputs or None, sources)
    except (ColumnsError, InputError) as exc:
        log.error("%s", exc)
        return 2
    finally:
        spark.stop()
    print(json.dumps(summary))
    if summary.get("nothing_landed"):  # a run that could not do what it was asked never reports success
        log.error("%s", summary["nothing_landed"])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
