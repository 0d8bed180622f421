"""``cdc-backfill``: the operator command line. Each subcommand is a thin call into the package."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from cdc_backfill import __version__

log = logging.getLogger("cdc_backfill")

EPILOG = """examples:
  cdc-backfill doctor                 check PostgreSQL, Java, Spark and Airflow; print the fixes
  cdc-backfill doctor --fix           also migrate Airflow's metadata database
  cdc-backfill doctor --source postgresql+psycopg2://user@host/db
"""


def _cmd_doctor(args: argparse.Namespace) -> int:
    from cdc_backfill.doctor import render, run_checks, to_json

    checks = run_checks(source=args.source, fix=args.fix)
    print(to_json(checks) if args.json else render(checks))
    return 0 if all(c.ok for c in checks) else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cdc-backfill",
        description="Incremental snapshots and backfills for CDC pipelines.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"cdc-backfill {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug detail to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    doctor = sub.add_parser(
        "doctor",
        help="check each part of the stack and print the exact fix for what is wrong",
        description="Check PostgreSQL (reachable, wal_level=logical, a pgoutput slot), Java, a local Spark "
        "session and Airflow (importable, metadata DB migrated). Exit 1 if any part fails.",
        epilog="example: cdc-backfill doctor --fix",
    )
    doctor.add_argument(
        "--source",
        metavar="URL",
        help="SQLAlchemy URL of the source (default: CDC_BACKFILL_SOURCE_URL, the config file, "
        "else an embedded server started for the check)",
    )
    doctor.add_argument("--fix", action="store_true", help="migrate Airflow's metadata DB if needed")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.set_defaults(func=_cmd_doctor)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from cdc_backfill.runtime import apply_defaults

    apply_defaults()
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
