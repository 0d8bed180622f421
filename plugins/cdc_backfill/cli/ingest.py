"""``cdc-backfill ingest``: files of change events into the landing zone's typed event log (a Spark job
through spark-submit; its steps on stderr, its summary on stdout)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from cdc_backfill.lakepath import lake_path
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE


def _cmd_ingest(args: argparse.Namespace) -> int:
    from cdc_backfill.cli.reconcile import submit_and_relay
    from cdc_backfill.config import SOURCE_URL_ENV, ConfigError, resolve_source
    from cdc_backfill.ingest.column_sources import ColumnsError, read_column_types
    from cdc_backfill.landing.stream import InputError
    from cdc_backfill.reconcile.run_size import first_compiler_only_to_ingest
    from cdc_backfill.spark.submit import ingest_command, printed_command, submit_environ

    def refuse(message: str) -> int:
        print(f"cdc-backfill ingest: {message}", file=sys.stderr)
        return 2

    missing = [p for p in args.inputs if not lake_path(p).exists()]
    if missing:
        return refuse(f"no such file or folder: {', '.join(missing)}")
    if not args.inputs and not lake_path(args.landing).is_dir():
        return refuse(f"no landing zone at {args.landing}: give it, or the files to ingest into it")
    try:
        # a bad file is refused before Spark starts
        given = read_column_types(Path(args.column_types)) if args.column_types else {}
        setting = resolve_source(args.source)
        if setting is None and not args.print_command:  # a catalog types what it holds: the job asks it
            _check_sample(args, given)
    except (ColumnsError, ConfigError, InputError) as exc:
        return refuse(str(exc))
    lake_path(args.landing).mkdir(parents=True, exist_ok=True)
    inputs = [lake_path(p) for p in args.inputs]
    small = first_compiler_only_to_ingest(lake_path(args.landing), inputs or None)
    cmd = ingest_command(
        args.landing, [str(p) for p in inputs], master=args.master, catalog=setting is not None,
        column_types=args.column_types, signal_table=args.signal_table, verbose=args.verbose, small=small,
    )  # fmt: skip
    if args.print_command:
        print(printed_command(cmd, args.master))
        return 0
    env = submit_environ(args.master)
    if setting is not None:
        env[SOURCE_URL_ENV] = setting.url  # not on the command line, where ps would show its password
    return submit_and_relay(cmd, env)


def _check_sample(args: argparse.Namespace, given: dict) -> None:  # type: ignore[type-arg]
    """The files' first records, typed by what the job would type them with (no catalog): a collection
    nothing describes is refused now, not after Spark's start-up."""
    from cdc_backfill.ingest.column_sources import ColumnSources
    from cdc_backfill.ingest.precheck import check_sample
    from cdc_backfill.landing.stream import ingest_paths

    landing = lake_path(args.landing)
    paths = [lake_path(p) for p in args.inputs] or ingest_paths(landing, None)
    if paths:
        check_sample(paths, ColumnSources(landing, args.signal_table, None, given))


def add_ingest_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    ing = sub.add_parser(
        "ingest",
        help="turn files of change events (any supported format) into the typed event log (Spark)",
        epilog="examples:\n  cdc-backfill ingest --landing lake/                      # lake/stream/'s JSON files\n"
        "  cdc-backfill ingest --landing lake/ topics/orders/ --source postgresql://user@host/db\n"
        "  cdc-backfill ingest --landing lake/ events.json --column-types types.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ing.add_argument("inputs", nargs="*", metavar="FILE_OR_FOLDER",
                     help="files or folders of change events (default: the landing zone's stream/)")  # fmt: skip
    ing.add_argument(
        "--landing", required=True, metavar="DIR", help="the landing zone whose log receives the events"
    )
    ing.add_argument(
        "--source", metavar="URL", help="type collections the landing does not describe from this catalog"
    )
    ing.add_argument("--column-types", metavar="FILE", help="JSON: each collection's key and column types")
    ing.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    ing.add_argument("--signal-table", default=DEFAULT_SIGNAL_TABLE, metavar="SCHEMA.TABLE",
                     help="the signal table (default public.cdc_signal)")  # fmt: skip
    ing.add_argument(
        "--print-command", action="store_true", help="print the spark-submit command, run nothing"
    )
    ing.set_defaults(func=_cmd_ingest)
