"""``cdc-backfill signal ...``: send, list and set up signals. Thin: the work is in cdc_backfill.signals."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cdc_backfill.config import SOURCE_HELP, require_source_url
from cdc_backfill.lakepath import lake_path
from cdc_backfill.snapshot.sizing import ADAPTIVE_SIZES

SIGNAL_EPILOG = """examples (every option):
  cdc-backfill signal init --source postgresql+psycopg2://cdc@db:5432/app
  cdc-backfill signal init --print-sql --dialect mssql --signal-table dbo.cdc_signal
  cdc-backfill signal execute-snapshot --collections 'public\\.orders' 'public\\.customer.*'
  cdc-backfill signal execute-snapshot --collections public.orders --condition "status = 'open' AND amount > 10"
  cdc-backfill signal execute-snapshot --collections 'public\\..*' \\
      --conditions '[{"data-collection": "public.orders", "filter": "region = '"'"'EU'"'"'"}]'
  cdc-backfill signal execute-snapshot --collections public.events --surrogate-key event_id --chunk-size 10000 --id backfill-2026-11
  cdc-backfill signal execute-snapshot --collections public.orders --dry-run     # check only, write nothing
  cdc-backfill signal stop-snapshot                                              # stop everything running
  cdc-backfill signal stop-snapshot --collections public.orders
  cdc-backfill signal pause-snapshot
  cdc-backfill signal resume-snapshot
  cdc-backfill signal log --message "backfill of orders started by ops"
  cdc-backfill signal list --json
  cdc-backfill signal reread --state state/                                      # rows missing a value
  cdc-backfill signal reread --state state/ --collections public.orders --dry-run

The source is --source URL, else CDC_BACKFILL_SOURCE_URL, else the config file ([source] url = ...).
Exit status: 0 written, 2 refused (the reason is printed; nothing is written), 3 the source cannot be reached.
"""


def _store(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from cdc_backfill.signals.store import SignalStore

    return SignalStore(require_source_url(args.source), args.signal_table)


def _signal_from_args(args: argparse.Namespace) -> Any:
    from cdc_backfill.signals.model import (
        Signal,
        conditions_from_json,
        execute_snapshot,
        new_signal_id,
        stop_snapshot,
    )

    sid = args.id or new_signal_id()
    kind = args.signal_command
    if kind == "execute-snapshot":
        conditions = conditions_from_json(args.conditions) if args.conditions is not None else ()
        return execute_snapshot(
            sid, args.collections, conditions=conditions, condition=args.condition,
            surrogate_key=args.surrogate_key, chunk_size=args.chunk_size,
        )  # fmt: skip
    if kind == "stop-snapshot":
        return stop_snapshot(sid, args.collections or ())
    if kind == "log":
        return Signal(sid, kind, message=args.message)
    return Signal(sid, kind, snapshot_type="incremental")


def _cmd_send(args: argparse.Namespace) -> int:
    from cdc_backfill.signals.model import SignalError

    try:
        signal = _signal_from_args(args)
        store = _store(args)
        validated = store.check(signal) if args.dry_run else store.send(signal)
    except SignalError as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 2
    verb = "would write" if args.dry_run else "written"
    targets = ", ".join(validated.collections)
    print(
        f"{signal.type} {signal.id} {verb} to {store.signal_table}" + (f" for {targets}" if targets else "")
    )
    print(f"data: {validated.signal.data_json()}")
    return 0


def _cmd_reread(args: argparse.Namespace) -> int:
    from cdc_backfill.reconcile.reread import RereadError, plan_rereads, reread_filter
    from cdc_backfill.signals.model import SignalError

    state = lake_path(args.state)
    if not state.is_dir():
        print(
            f"cdc-backfill signal reread: no state at {args.state} (give the folder reconcile writes)",
            file=sys.stderr,
        )
        return 2
    from cdc_backfill.state.table import state_collections

    todo = []
    try:
        for plan in plan_rereads(state, args.collections or state_collections(state)):
            todo += [(plan.collection, sig) for sig in plan.signals]
            if plan.missing:
                print(f"{plan.collection}: {plan.missing} row(s) miss a value the stream never sent")
    except RereadError as exc:
        print(f"cdc-backfill signal reread: {exc}", file=sys.stderr)
        return 2
    if not todo:
        print("nothing to re-read: every row of the state has all its values")
        return 0
    store = _store(args)
    for coll, sig in todo:
        try:
            store.check(sig) if args.dry_run else store.send(sig)
        except SignalError as exc:
            print(f"refused: {exc}", file=sys.stderr)
            return 2
        verb = "would write" if args.dry_run else "written"
        print(f"execute-snapshot {sig.id} {verb} to {store.signal_table} for {coll}: {reread_filter(sig)}")
    if not args.dry_run:
        print("the snapshot engine reads those keys; reconcile afterwards and the rows are complete")
    return 0


def _cmd_init(args: argparse.Namespace) -> int:
    from sqlalchemy.engine import make_url

    from cdc_backfill.signals.tables import DEFAULT_SCHEMAS, SIGNAL_TABLE, ddl_statements, split_name

    if args.print_sql:
        dialect = args.dialect or make_url(require_source_url(args.source)).get_backend_name()
        schema, name = split_name(args.signal_table or SIGNAL_TABLE)
        for stmt in ddl_statements(dialect, schema or DEFAULT_SCHEMAS.get(dialect), name):
            print(stmt + ";\n")
        return 0
    store = _store(args)
    created = store.init()
    print(f"created {', '.join(created)}" if created else "signal tables already exist", f"in {store.schema}")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    store = _store(args)
    views = _with_interrupted(store, store.list())
    if args.json:
        print(json.dumps([v.to_dict() for v in views], indent=2))
        return 0
    rows = [("id", "type", "collections", "status", "progress", "received at", "reason")]
    for v in views:
        progress = ""
        if v.progress:
            progress = ", ".join(f"{k}={val}" for k, val in v.progress.items())
        rows.append(
            (
                v.id,
                v.type,
                ",".join(v.collections) or "-",
                v.status,
                progress or "-",
                v.received_at or "-",
                v.reason or "",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    for r in rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(6)) + "  " + r[6])
    return 0


def _with_interrupted(store: Any, views: list[Any]) -> list[Any]:
    """Signals whose engine died show as interrupted (the snapshot's heartbeat), not as what the engine
    last wrote."""
    import dataclasses

    from cdc_backfill.snapshot.queries import read_progress
    from cdc_backfill.snapshot.status import interrupted, summarize

    dead = interrupted(summarize(read_progress(store.sa_engine, store.schema)))
    return [
        dataclasses.replace(v, status="interrupted", reason=dead[v.id]) if v.id in dead else v for v in views
    ]


def add_signal_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    signal = sub.add_parser(
        "signal",
        help="send, list and set up snapshot signals (Debezium's signal table)",
        description="Write execute-snapshot, stop-snapshot, pause-snapshot, resume-snapshot and log signals "
        "into the source's signal table, checked first against the source's catalog.",
        epilog=SIGNAL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common, send = _parent_parsers()
    kinds = signal.add_subparsers(dest="signal_command", metavar="ACTION", required=True)
    _add_init_parser(kinds, common)
    _add_execute_parser(kinds, send)
    _add_control_parsers(kinds, send)
    _add_reread_parser(kinds, common)
    _add_list_parser(kinds, common)


def _parent_parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """(the options of every action: where the signal table is; those of the actions that send a
    signal, on top)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--source", metavar="URL", help=SOURCE_HELP)
    common.add_argument(
        "--signal-table",
        metavar="SCHEMA.TABLE",
        help="the signal table (default: cdc_signal in public / dbo)",
    )
    send = argparse.ArgumentParser(add_help=False, parents=[common])
    send.add_argument("--id", help="the signal id (default: sig-<utc time>-<random>); at most 42 characters")
    send.add_argument("--dry-run", action="store_true", help="check everything, write nothing")
    return common, send


def _add_init_parser(kinds: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:  # type: ignore[type-arg]
    init = kinds.add_parser("init", parents=[common], help="create the signal and status tables if missing")
    init.add_argument("--print-sql", action="store_true", help="print the CREATE TABLE statements instead")
    init.add_argument(
        "--dialect", choices=["postgresql", "mssql", "oracle", "mysql"], help="with --print-sql"
    )
    init.set_defaults(func=_cmd_init)


def _add_execute_parser(kinds: argparse._SubParsersAction, send: argparse.ArgumentParser) -> None:  # type: ignore[type-arg]
    ex = kinds.add_parser(
        "execute-snapshot",
        parents=[send],
        help="start an incremental snapshot of the tables matching the patterns",
        epilog="example: cdc-backfill signal execute-snapshot --collections public.orders --condition \"status = 'open'\"",
    )
    ex.add_argument(
        "--collections", nargs="+", required=True, metavar="REGEX", help="whole-name patterns, schema.table"
    )
    cond = ex.add_mutually_exclusive_group()
    cond.add_argument(
        "--condition", metavar="SQL", help="one predicate over the tables' columns, for every table"
    )
    cond.add_argument(
        "--conditions", metavar="JSON", help='per table: [{"data-collection": "REGEX", "filter": "SQL"}, ...]'
    )
    ex.add_argument(
        "--surrogate-key", metavar="COLUMN", help="the column to chunk by instead of the primary key"
    )
    ex.add_argument(
        "--chunk-size",
        type=int,
        metavar="N",
        help=f"rows per chunk (1 to 1,000,000); without it {ADAPTIVE_SIZES}",
    )
    ex.set_defaults(func=_cmd_send)


def _add_control_parsers(kinds: argparse._SubParsersAction, send: argparse.ArgumentParser) -> None:  # type: ignore[type-arg]
    """The signals that steer running snapshots (stop, pause, resume) and the log message."""
    stop = kinds.add_parser(
        "stop-snapshot",
        parents=[send],
        help="stop running snapshots (all, or those of the patterns)",
        epilog="example: cdc-backfill signal stop-snapshot --collections public.orders",
    )
    stop.add_argument("--collections", nargs="*", metavar="REGEX", help="default: every running snapshot")
    stop.set_defaults(func=_cmd_send)
    for name, text in (
        ("pause-snapshot", "pause between chunks"),
        ("resume-snapshot", "resume a paused snapshot"),
    ):
        p = kinds.add_parser(name, parents=[send], help=text, epilog=f"example: cdc-backfill signal {name}")
        p.set_defaults(func=_cmd_send)
    lg = kinds.add_parser(
        "log", parents=[send], help="write a message into the stream (Debezium logs it)",
        epilog='example: cdc-backfill signal log --message "orders backfill started"',
    )  # fmt: skip
    lg.add_argument("--message", required=True, help="the text to log")
    lg.set_defaults(func=_cmd_send)


def _add_reread_parser(kinds: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:  # type: ignore[type-arg]
    rr = kinds.add_parser(
        "reread", parents=[common], help="re-read the rows of a state that miss a value the stream never sent",
        epilog="example: cdc-backfill signal reread --state state/",
    )  # fmt: skip
    rr.add_argument("--dry-run", action="store_true", help="check everything, write nothing")
    rr.add_argument("--state", required=True, metavar="DIR", help="the state folder the reconcile writes")
    rr.add_argument(
        "--collections", nargs="*", metavar="COLLECTION", help="default: every collection of the state"
    )
    rr.set_defaults(func=_cmd_reread)


def _add_list_parser(kinds: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:  # type: ignore[type-arg]
    ls = kinds.add_parser(
        "list", parents=[common], help="every signal with its status, progress and reason",
        epilog="example: cdc-backfill signal list --json",
    )  # fmt: skip
    ls.add_argument("--json", action="store_true", help="print JSON for scripts")
    ls.set_defaults(func=_cmd_list)
