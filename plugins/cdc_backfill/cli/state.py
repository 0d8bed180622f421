"""``cdc-backfill state``: show or query the reconciled state. Thin: the work is in cdc_backfill.query."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cdc_backfill.lakepath import lake_path

if TYPE_CHECKING:
    from cdc_backfill.query import Result

STATE_EPILOG = """examples:
  cdc-backfill state --state state/                                   # collections, rows, version, position
  cdc-backfill state --state state/ public.customers                  # the first 20 rows
  cdc-backfill state --state state/ --sql "SELECT tier, count(*) FROM customers GROUP BY 1"
  cdc-backfill state --state state/ --sql 'SELECT * FROM "public.order_lines" WHERE qty > 5' --json
  cdc-backfill state --state state/ public.customers --history        # its versions
  cdc-backfill state --state state/ public.customers --version 3      # the rows of version 3
  cdc-backfill state --state state/ --sql "SELECT count(*) FROM customers" --as-of 2026-11-25T14:30:00Z

Each collection is a view named "schema.table" (in double quotes) and, where unique, by its table name.
Each collection's state is a Delta table (<state>/<schema.table>/): Spark, DuckDB, Polars and pandas
read it too (docs/guides/reconcile-and-verify.md).
"""


def _cmd_state(args: argparse.Namespace) -> int:
    from cdc_backfill.query import StateQueryError, render

    refused = _refused(args)
    if refused:
        print(f"cdc-backfill state: {refused}", file=sys.stderr)
        return 2
    state = lake_path(args.state)
    try:
        result = _result(args, state)
    except StateQueryError as exc:
        print(f"cdc-backfill state: {exc}", file=sys.stderr)
        return 2
    if (args.sql or args.collection) and not args.history:
        warn_incomplete(state, args.state)
    if args.json:
        for row in result.rows:
            print(json.dumps(dict(zip(result.columns, row, strict=True)), default=str))
    else:
        print(render(result))
    return 0


def _refused(args: argparse.Namespace) -> str | None:
    if (args.version is not None or args.history) and not args.collection:
        return "--version and --history are a collection's: name it (schema.table)"
    if args.version is not None and args.as_of:
        return "give --version or --as-of, not both"
    return None


def _result(args: argparse.Namespace, state: Path) -> Result:
    """What the arguments ask for."""
    from cdc_backfill.query import StateQueryError, describe, history, run_sql, show
    from cdc_backfill.state.table import StateError, as_time

    try:
        as_of = as_time(args.as_of).isoformat() if args.as_of else None
    except StateError as exc:
        raise StateQueryError(str(exc)) from None
    if args.history:
        return history(state, args.collection)
    if args.sql:
        versions = {args.collection: args.version} if args.collection and args.version is not None else None
        return run_sql(state, args.sql, args.limit, versions, as_of, args.all_columns)
    if args.collection:
        return show(state, args.collection, args.limit or 20, args.version, as_of)
    return describe(state)


def warn_incomplete(state: Path, typed: str) -> None:
    """A NULL in a row the stream never sent a value for is unknown, not NULL: say so beside any query."""
    import shlex

    from cdc_backfill.query import describe

    for row in describe(state).rows:
        if row[-1]:
            print(
                f"note: {row[-1]:,} row(s) of {row[0]} miss a value the stream never sent (NULL there means "
                "unknown; the column `_cdc_unknown` of the Parquet files names it); re-read them: "
                f"cdc-backfill signal reread --state {shlex.quote(typed)}",
                file=sys.stderr,
            )


def add_state_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    st = sub.add_parser(
        "state",
        help="show or query the reconciled state (DuckDB over each collection's Delta table)",
        description="Without a collection: every collection's rows, version and position. With one: its "
        "first rows. With --sql: any query over all collections.",
        epilog=STATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    st.add_argument("collection", nargs="?", metavar="COLLECTION", help="schema.table to show rows of")
    st.add_argument("--state", required=True, metavar="DIR", help="the state folder the reconcile writes")
    st.add_argument("--sql", metavar="QUERY", help="a SELECT over the collections' views")
    st.add_argument("--limit", type=int, metavar="N", help="at most N rows (default: 20 for a collection)")
    st.add_argument("--json", action="store_true", help="one JSON object per row")
    st.add_argument("--version", type=int, metavar="N", help="the collection's version N (see --history)")
    st.add_argument("--as-of", metavar="TIME", help="every collection as it was at TIME (ISO 8601, UTC)")
    st.add_argument(
        "--all-columns",
        action="store_true",
        help="--sql sees the bookkeeping columns too (_cdc_position, _cdc_unknown)",
    )
    st.add_argument("--history", action="store_true", help="the collection's versions")
    st.set_defaults(func=_cmd_state)
