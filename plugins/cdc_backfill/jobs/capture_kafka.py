"""spark-submit entry point: Debezium and DataWorks topics into the landing zone's typed event log.

Thin: parse arguments, build the session, call ``cdc_backfill.ingest.spark.capture_kafka.capture_rounds``: once
(``--drain``) or in rounds until SIGTERM/SIGINT (``--follow``); print its summary. The broker's client
settings come in ``CDC_BACKFILL_KAFKA_PROPERTIES`` (JSON) and the source, when given, in
``CDC_BACKFILL_SOURCE_URL``: not on the command line, where ``ps`` would show their secrets.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from cdc_backfill.config import resolve_source
from cdc_backfill.ingest.column_sources import ColumnsError, job_sources
from cdc_backfill.ingest.rounds import Rounds
from cdc_backfill.ingest.spark.capture_kafka import capture_rounds
from cdc_backfill.kafka.topics import Broker, KafkaError, ReadFailed
from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.stream import InputError
from cdc_backfill.logs import setup_logging
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE
from cdc_backfill.spark.session import build_session

log = logging.getLogger("cdc_backfill.capture.kafka")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--landing", required=True)
    ap.add_argument("--bootstrap-servers", required=True)
    ap.add_argument("--topics", required=True)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--drain", action="store_true")
    mode.add_argument("--follow", action="store_true")
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--catalog", action="store_true")
    ap.add_argument("--column-types", type=Path)
    ap.add_argument("--signal-table", default=DEFAULT_SIGNAL_TABLE)
    ap.add_argument("--skip-lost-offsets", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.verbose)
    landing = lake_path(args.landing)
    try:
        broker = Broker.from_environ(args.bootstrap_servers)
        setting = resolve_source() if args.catalog else None
        sources = job_sources(landing, args.signal_table, setting and setting.url, args.column_types)
    except (ColumnsError, KafkaError) as exc:
        log.error("%s", exc)
        return 2
    spark = build_session("cdc_backfill_capture_kafka")
    rounds = Rounds(args.interval if args.follow else None)
    try:
        total = capture_rounds(spark, landing, broker, args.topics, sources, rounds, args.skip_lost_offsets)
    except ReadFailed as exc:
        log.error("%s", exc)
        return 1
    except (ColumnsError, InputError, KafkaError) as exc:
        log.error("%s", exc)
        return 2
    finally:
        spark.stop()
    print(json.dumps(total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
