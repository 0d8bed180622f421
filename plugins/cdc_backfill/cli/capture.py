"""``cdc-backfill capture ...``: thin calls into cdc_backfill.capture."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cdc_backfill.config import require_source_url

CAPTURE_EPILOG = """examples:
  cdc-backfill capture postgres --source postgresql+psycopg2://cdc@db/app --landing /lake/app --drain
  cdc-backfill capture postgres --landing /lake/app --collections 'public\\.orders' 'public\\.customers' --follow
  cdc-backfill capture status --landing /lake/app
"""


def _cmd_postgres(args: argparse.Namespace) -> int:
    from cdc_backfill.capture.postgres import CaptureError, PostgresCapture
    from cdc_backfill.capture.typed import TypedPostgresCapture

    collections = args.collections
    if args.tables:
        print("cdc-backfill capture: --tables is now --collections (it still works)", file=sys.stderr)
        collections = [*(collections or []), *args.tables]
    try:
        kind = TypedPostgresCapture if args.format == "log" else PostgresCapture
        cap = kind(
            require_source_url(args.source),
            Path(args.landing),
            slot=args.slot,
            publication=args.publication,
            collections=collections,
            signal_table=args.signal_table,
            roll_bytes=int(args.roll_mb * (1 << 20)),
            roll_seconds=args.roll_seconds,
        )
        stats = cap.run(follow=args.follow)
    except CaptureError as exc:
        print(f"capture refused: {exc}", file=sys.stderr)
        return 2
    rate = stats.events / max(1e-9, __import__("time").monotonic() - stats.started)
    print(
        f"{stats.transactions} transactions, {stats.events} events landed in {stats.files} files "
        f"({rate:,.0f} events/s), {stats.skipped} already landed skipped"
    )
    return 0


def _cmd_status(args: argparse.Namespace) -> int:
    from cdc_backfill.capture.postgres import CaptureError, capture_status

    try:
        status = capture_status(
            require_source_url(args.source), Path(args.landing) if args.landing else None, args.slot
        )
    except CaptureError as exc:
        print(str(exc), file=sys.stderr)
        return 3
    if args.json:
        print(json.dumps(status, indent=2))
    else:
        for k, v in status.items():
            print(f"{k:>16}: {v}")
    return 0


def add_capture_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from cdc_backfill.capture.postgres import DEFAULT_PUBLICATION, DEFAULT_SLOT

    cap = sub.add_parser(
        "capture",
        help="stream a source's changes into the landing zone",
        epilog=CAPTURE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = cap.add_subparsers(dest="capture_command", metavar="ACTION", required=True)
    pg = kinds.add_parser(
        "postgres",
        help="pgoutput logical replication to the typed event log (or Debezium-shaped JSON lines)",
        epilog=CAPTURE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pg.add_argument(
        "--source", metavar="URL", help="SQLAlchemy URL (default: CDC_BACKFILL_SOURCE_URL or config)"
    )
    pg.add_argument(
        "--landing", required=True, metavar="DIR", help="the landing zone (the log goes to DIR/log)"
    )
    pg.add_argument(
        "--slot", default=DEFAULT_SLOT, help=f"replication slot (default {DEFAULT_SLOT}; created if missing)"
    )
    pg.add_argument(
        "--publication", default=DEFAULT_PUBLICATION, help="publication (created or extended if needed)"
    )
    pg.add_argument(
        "--collections",
        nargs="+",
        metavar="REGEX",
        help="collections (schema.table regexes) to capture (default: every table with a key)",
    )
    pg.add_argument("--tables", nargs="+", help=argparse.SUPPRESS)  # the earlier name of --collections
    pg.add_argument("--signal-table", metavar="SCHEMA.TABLE", help="the signal table (always captured)")
    pg.add_argument(
        "--format",
        choices=("log", "json"),
        default="log",
        help="land the typed event log in log/ (default, DESIGN.md 5.0) or JSON lines in stream/ (the earlier "
        "format: `cdc-backfill ingest` moves them into the log before a reconcile)",
    )
    pg.add_argument("--roll-mb", type=float, default=64, help="finish a file at this size (default 64)")
    pg.add_argument("--roll-seconds", type=float, default=30, help="or at this age (default 30)")
    mode = pg.add_mutually_exclusive_group(required=True)
    mode.add_argument("--drain", action="store_true", help="land everything committed until now, then exit 0")
    mode.add_argument("--follow", action="store_true", help="run until SIGTERM/SIGINT, then stop cleanly")
    pg.set_defaults(func=_cmd_postgres)
    st = kinds.add_parser("status", help="slot lag, last confirmed LSN, files landed")
    st.add_argument("--source", metavar="URL")
    st.add_argument("--landing", metavar="DIR")
    st.add_argument("--slot", default=DEFAULT_SLOT)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=_cmd_status)
