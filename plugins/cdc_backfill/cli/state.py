"""``cdc-backfill state``: show or query the reconciled state. Thin: the work is in cdc_backfill.query."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

STATE_EPILOG = """examples:
  cdc-backfill state --state state/                                   # collections, rows, version, position
  cdc-backfill state --state state/ public.customers                  # the first 20 rows
  cdc-backfill state --state state/ --sql "SELECT tier, count(*) FROM customers GROUP BY 1"
  cdc-backfill state --state state/ --sql 'SELECT * FROM "public.order_lines" WHERE qty > 5' --json

Each collection is a view named "schema.table" (in double quotes) and, where unique, by its table name.
"""


def _cmd_state(args: argparse.Namespace) -> int:
    from cdc_backfill.query import StateQueryError, describe, render, run_sql, show

    state = Path(args.state)
    try:
        if args.sql:
            result = run_sql(state, args.sql, args.limit)
        elif args.collection:
            result = show(state, args.collection, args.limit or 20)
        else:
            result = describe(state)
    except StateQueryError as exc:
        print(f"cdc-backfill state: {exc}", file=sys.stderr)
        return 2
    if args.sql or args.collection:
        warn_incomplete(state, args.state)
    if args.json:
        for row in result.rows:
            print(json.dumps(dict(zip(result.columns, row, strict=True)), default=str))
    else:
        print(render(result))
    return 0


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
        help="show or query the reconciled state (DuckDB over the current versions)",
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
    st.set_defaults(func=_cmd_state)
