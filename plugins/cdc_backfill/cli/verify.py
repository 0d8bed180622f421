"""``cdc-backfill verify``: compare one collection's reconciled state with the live source, range by range,
and with ``--repair`` send one execute-snapshot of the ranges that differ.

Thin: the SQL, the ranges, the comparison and the repair signal are in ``cdc_backfill.verify``, the
Spark side in ``cdc_backfill.verify.spark.range_stats``. Spark is imported only when the command runs.

``--repair`` re-reads the ranges that differ; a key in the state that the source no longer has goes
when that snapshot finishes (its ranges are a condition on the key: phantom removal, docs/design.md §6 rule 7).
Both sides are compared as of one stream position (``cdc_backfill.verify.spark.at_position``).
What it cannot fix:
- columns that differ between the source and the state (verify refuses: exit 2);
- differences that are only the state being behind the source: drain and reconcile first.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import shlex
import sys
from typing import TYPE_CHECKING

from sqlalchemy.engine import make_url

from cdc_backfill.config import SOURCE_HELP, mask_url, require_source_url, source_engine
from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.layout import collection_dir
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE
from cdc_backfill.verify.ranges import DEFAULT_RANGES, MAX_RANGES
from cdc_backfill.verify.recheck import MAX_RECHECKS, ROUNDS

if TYPE_CHECKING:
    from cdc_backfill.verify.compare import Report
    from cdc_backfill.verify.source_side import SourceSide

log = logging.getLogger(__name__)

CHANGING = 4  # exit status: nothing known to differ, some ranges kept changing while verified
# printed under the repair's commands when --landing was not given: LANDING stands in for it
LANDING_NOTE = "  (LANDING: the landing zone the capture writes to; give --landing to have it filled in)"

VERIFY_EPILOG = f"""examples (every option):
  cdc-backfill verify --source postgresql+psycopg2://cdc@db:5432/app --state state/ --collection public.orders
  cdc-backfill verify --state state/ --collection public.orders --ranges 64       # finer ranges
  cdc-backfill verify --state state/ --collection public.orders --json > report.json
  cdc-backfill verify --state state/ --collection public.orders --repair          # re-snapshot what differs
  cdc-backfill verify --state state/ --collection public.orders --repair --wait --landing lake/
  cdc-backfill verify --state state/ --collection public.orders --repair --signal-table ops.cdc_signal
  cdc-backfill verify --state state/ --collection public.order_lines --master local[2]
  cdc-backfill verify --state state/ --collection public.orders --landing lake/ --rechecks 5   # busy source

The source is --source URL, else CDC_BACKFILL_SOURCE_URL, else the config file ([source] url = ...).
Ranges are cut at keys of the source (text keys in byte order, as Spark compares them); each range's rows
are counted and hashed by SQL in the source and by Spark on the current version of <state>/<collection>/ (a Delta table).
Both sides are read as of one position (PostgreSQL: a snapshot exported with a temporary slot; the
landing drained past it; the state advanced to it in memory, not written), so writers may keep writing.
The landing is --landing DIR, else the one the state's last reconcile read.
--repair re-reads the differing ranges; keys the source no longer has go when that snapshot finishes.
--repair --wait --landing DIR runs the snapshot, the drain, the reconcile and verify again; without
--wait, --repair prints those commands.
Where no exact position can be had (a Debezium landing, no landing), the source is read now and the
state advanced over the landed stream; a range that differs is re-checked after the landing is brought
up to now (up to --rechecks times, default {ROUNDS}), and one whose source kept changing meanwhile is
reported apart: "kept changing while verified".
Exit status: 0 every range equal, 1 some ranges differ, 2 cannot verify or repair (the reason is
printed), 3 the source cannot be reached, 4 no range known to differ but some kept changing while
verified (verify again when writes pause). --ranges: 1 to {MAX_RANGES:,}; --rechecks: 1 to {MAX_RECHECKS}.
"""


def _cmd_verify(args: argparse.Namespace) -> int:
    refused = _refused(args)
    if refused:
        print(refused, file=sys.stderr)
        return 2
    url = require_source_url(args.source)
    backend = make_url(url).get_backend_name()
    if backend not in ("postgresql", "postgres"):
        # its range counts and hashes are PostgreSQL SQL (verify/sql.py); other sources are not read
        print(f"cannot verify: verify reads PostgreSQL sources only, not a {backend} source", file=sys.stderr)
        return 2
    verified = _verify_at_position(args, url)
    if verified is None:
        return 2
    source, report = verified
    table = collection_dir(lake_path(args.state), args.collection)
    report = dataclasses.replace(report, extra={"source": mask_url(url), "state": str(table), **report.extra})
    repaired, repair_id = _repair(args, url, source, report) if args.repair else (0, None)
    hint = None if args.repair else _repair_hint(args, report)
    _print_report(args, report, hint)
    if repaired:
        return repaired
    if args.wait and repair_id is not None:
        return _complete(args, repair_id)
    return 0 if report.all_equal else (1 if report.differing else CHANGING)


def _refused(args: argparse.Namespace) -> str | None:
    """Why the options cannot be run together, before anything is read; None when they can."""
    if args.wait and not (args.repair and args.landing):
        return "--wait completes a repair: give it with --repair and --landing DIR"
    if not 1 <= args.ranges <= MAX_RANGES:
        return f"--ranges must be between 1 and {MAX_RANGES:,}, not {args.ranges}"
    if not 1 <= args.rechecks <= MAX_RECHECKS:
        return f"--rechecks must be between 1 and {MAX_RECHECKS}, not {args.rechecks}"
    return None


def _verify_at_position(args: argparse.Namespace, url: str) -> tuple[SourceSide, Report] | None:
    """The collection verified, at one stream position when one can be had: (the source's side, the
    report); None when it cannot be verified (the reason printed: exit 2). Spark is imported here, when
    the command runs."""
    from cdc_backfill.capture.catch_up import reach
    from cdc_backfill.capture.publication import CaptureError
    from cdc_backfill.reconcile.runs import last_landing
    from cdc_backfill.reconcile.spark.job import LandingError
    from cdc_backfill.verify import VerifyError
    from cdc_backfill.verify.spark.at_position import verify_collections

    # Absolute before Spark sees it: a session's JVM resolves relative paths against its own folder.
    state = lake_path(args.state).absolute()
    sa_engine = source_engine(url, pool_pre_ping=True)
    # the landing given, else the one the state's last reconcile read
    landing = lake_path(args.landing).absolute() if args.landing else last_landing(state)
    ways = reach(url, landing, args.signal_table)
    try:
        [done] = verify_collections(
            url, sa_engine, state, [args.collection], args.ranges, landing=landing, catch_up=ways.catch_up,
            refresh=ways.refresh, not_exact=ways.not_exact, signal_table=args.signal_table or DEFAULT_SIGNAL_TABLE,
            master=args.master, rechecks=args.rechecks,
        )  # fmt: skip
    except (VerifyError, CaptureError, LandingError) as exc:
        print(f"cannot verify: {exc}", file=sys.stderr)
        return None
    finally:
        sa_engine.dispose()
    return done.source, done.report


def _repair_hint(args: argparse.Namespace, report: Report) -> str | None:
    """Without ``--repair``: the command that repairs what differs, as a shell runs it (also recorded
    in the report); None when nothing differs."""
    if not report.differing:
        return None
    from cdc_backfill.verify.steps import repair_command

    command, note = repair_command(
        args.source, args.landing or "LANDING", args.state, args.collection, args.signal_table
    )
    hint = shlex.join(command) + (f"  ({note})" if note else "")
    report.extra["repair_command"] = hint
    return hint


def _print_report(args: argparse.Namespace, report: Report, hint: str | None) -> None:
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return
    from cdc_backfill.verify.compare import render

    print(render(report))
    if hint:
        print(f"repair it: {hint}")
        if not args.landing:
            print(LANDING_NOTE)


def _repair(args: argparse.Namespace, url: str, source: SourceSide, report: Report) -> tuple[int, str | None]:
    """Send the repair signal; record it in the report. (2 when it is refused, else 0; the signal's id,
    None when nothing was sent)."""
    from cdc_backfill.signals.model import SignalError
    from cdc_backfill.verify.repair import send_repair

    if not report.differing:
        report.extra["repair"] = None
        if report.changing:
            print("nothing known to differ to repair: verify again when writes pause", file=sys.stderr)
            return CHANGING, None
        print("nothing to repair: every range is equal", file=sys.stderr)
        return 0, None
    try:
        repair, signal_table = send_repair(
            url, args.signal_table, report.collection, source, report.differing
        )
    except SignalError as exc:
        print(f"repair refused: {exc}", file=sys.stderr)
        return 2, None
    report.extra["repair"] = repair.to_dict()
    scope = {
        "ranges": f"ranges {', '.join(map(str, report.differing))}",
        "span": f"ranges {report.differing[0]} to {report.differing[-1]} (the exact list did not fit the signal)",
        "table": "the whole table",
    }[repair.scope]
    out = sys.stderr if args.json else sys.stdout
    print(
        f"repair: execute-snapshot {repair.signal.id} sent to {signal_table} for {report.collection}, {scope}",
        file=out,
    )
    steps = _steps(args, repair.signal.id)
    report.extra["repair"]["commands"] = [shlex.join(c) for c in steps.commands]
    if not args.wait:
        print("complete it with these commands, in order (or run verify with --repair --wait):", file=out)
        for c in steps.commands:
            print(f"  {shlex.join(c)}", file=out)
        if steps.note:
            print(f"  ({steps.note})", file=out)
        if not args.landing:
            print(LANDING_NOTE, file=out)
    return 0, repair.signal.id


def _steps(args: argparse.Namespace, signal_id: str):  # type: ignore[no-untyped-def]
    from cdc_backfill.verify.steps import landing_engine, repair_steps

    landing = args.landing or "LANDING"
    engine = landing_engine(lake_path(landing)) if args.landing else "native"
    return repair_steps(
        args.source, landing, args.state, args.collection, signal_id, engine, args.signal_table
    )


def _complete(args: argparse.Namespace, signal_id: str) -> int:
    """``--wait``: run the printed commands one after the other, as printed; the last one is verify, and
    its exit status is the repair's: 0 only when every range is equal."""
    import subprocess

    steps = _steps(args, signal_id)
    code = 1
    for c in steps.commands:
        print(f"repair: {shlex.join(c)}", file=sys.stderr, flush=True)
        code = subprocess.run([sys.executable, "-m", "cdc_backfill.cli", *c[1:]]).returncode
        if code != 0 and c[1] != "verify":
            print(
                f"repair: `{shlex.join(c)}` failed (exit {code}): fix what it says, then run the rest",
                file=sys.stderr,
            )
            return code
    return code


def add_verify_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "verify",
        help="compare a collection's state with the source per key range; --repair re-snapshots what differs",
        description="Cut the collection's key space into ranges at keys of the source, count and hash each "
        "range's rows by SQL in the source and by Spark in the state, and list the ranges that differ.",
        epilog=VERIFY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--source", metavar="URL", help=SOURCE_HELP)
    p.add_argument(
        "--state", required=True, metavar="DIR", help="the state folder that `reconcile --state` wrote"
    )
    p.add_argument("--collection", required=True, metavar="SCHEMA.TABLE", help="the table to verify")
    p.add_argument(
        "--ranges",
        type=int,
        default=DEFAULT_RANGES,
        metavar="N",
        help=f"key ranges to compare (default {DEFAULT_RANGES})",
    )
    p.add_argument(
        "--rechecks",
        type=int,
        default=ROUNDS,
        metavar="N",
        help=f"where no exact position can be had: re-check a range that keeps changing up to N times before "
        f"saying so (default {ROUNDS}; each brings the landing up to now)",
    )
    p.add_argument(
        "--repair",
        action="store_true",
        help="send one execute-snapshot signal limited to the differing ranges; print its id",
    )
    p.add_argument(
        "--signal-table", metavar="SCHEMA.TABLE", help="with --repair (default: cdc_signal in public)"
    )
    p.add_argument(
        "--landing",
        metavar="DIR",
        help="the landing zone the capture writes to, to print (or, with --repair --wait, run) the repair's "
        "commands whole",
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="with --repair: run the snapshot, the drain, the reconcile and verify now; exit 0 only when "
        "every range is then equal",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON for scripts")
    p.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    p.set_defaults(func=_cmd_verify)
