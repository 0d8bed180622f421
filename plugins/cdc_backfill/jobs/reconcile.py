"""spark-submit entry point: reconcile landed stream events and READ chunks into versioned states.

Thin: parse arguments, build the session, call ``cdc_backfill.reconcile.spark.job.reconcile_job``, print its
summary. Each run reads only the log rolled after the collection's current state and the READ chunks it
has not judged, plus the carry that state left (see cdc_backfill.reconcile.runs).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from cdc_backfill.ingest.column_sources import ColumnsError
from cdc_backfill.kafka.topics import Broker, KafkaError, ReadFailed
from cdc_backfill.landing.stream import InputError
from cdc_backfill.logs import setup_logging
from cdc_backfill.reconcile.spark.job import LandingError, reconcile_job
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE
from cdc_backfill.spark.session import build_session
from cdc_backfill.state.table import StateError

log = logging.getLogger("cdc_backfill.reconcile")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--landing", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--collections", nargs="*")
    ap.add_argument("--signal-table", default=DEFAULT_SIGNAL_TABLE)
    ap.add_argument(
        "--ingest",
        action="store_true",
        help="first ingest the JSON batches in the landing's stream/ (capture debezium)",
    )
    ap.add_argument(
        "--bootstrap-servers", help="with --topics: first read the topics (capture kafka --drain)"
    )
    ap.add_argument("--topics", help="a regex of whole topic names, read first from --bootstrap-servers")
    ap.add_argument("-v", "--verbose", action="store_true", help="log every detail, Spark's too")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.verbose)
    try:
        broker = Broker.from_environ(args.bootstrap_servers) if args.topics else None
    except KafkaError as exc:
        log.error("%s", exc)
        return 2
    spark = build_session("cdc_backfill_reconcile")
    try:
        summary = reconcile_job(
            spark, args.landing, args.state, args.collections, args.signal_table,
            ingest=args.ingest, topics=(broker, args.topics) if broker is not None else None,
        )  # fmt: skip
    except (LandingError, ColumnsError, InputError, KafkaError) as exc:
        log.error("%s", exc)
        return 1 if isinstance(exc, ReadFailed) else 2
    except StateError as exc:  # a state that cannot be read, or another run committed first
        log.error("%s", exc)
        return 1
    finally:
        spark.stop()
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
