"""``cdc-backfill``: the parser, the small commands (doctor, events, demo, airflow) and the one place an
error becomes one line and an exit status."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from cdc_backfill import __version__
from cdc_backfill.logs import setup_logging

log = logging.getLogger("cdc_backfill")

EPILOG = """examples:
  cdc-backfill doctor                 check PostgreSQL, Java, Spark and Airflow; print the fixes
  cdc-backfill doctor --fix           also migrate Airflow's metadata database
  cdc-backfill doctor --source postgresql+psycopg2://user@host/db
  cdc-backfill events parse landing/*.jsonl > events.jsonl
  cdc-backfill verify --state state/ --collection public.orders --repair
"""


def _parse_key_columns(items: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for item in items:
        coll, sep, cols = item.partition("=")
        if not sep or not coll or not cols:
            raise SystemExit(f"--key-columns takes COLLECTION=col1,col2, not {item!r}")
        out[coll] = [c.strip() for c in cols.split(",") if c.strip()]
    return out


def _cmd_events_parse(args: argparse.Namespace) -> int:
    from cdc_backfill.events import ParseOptions, Quarantined
    from cdc_backfill.events.model import dumps
    from cdc_backfill.events.parse import iter_file

    options = ParseOptions(
        format=args.format, collection=args.collection, key_columns=_parse_key_columns(args.key_columns)
    )
    missing = [p for p in args.files if not Path(p).is_file()]
    if missing:
        print(f"cdc-backfill events: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    out, err = sys.stdout.buffer, sys.stderr.buffer
    events = quarantined = 0
    for path in args.files:
        for _lineno, item in iter_file(path, options):
            if isinstance(item, Quarantined):
                err.write(dumps({"quarantined": item.to_dict()}) + b"\n")
                quarantined += 1
                continue
            for event in item:
                out.write(dumps(event.to_dict()) + b"\n")
                events += 1
    out.flush()
    print(f"{events} events, {quarantined} records quarantined", file=sys.stderr)
    return 1 if quarantined else 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    from cdc_backfill.doctor import healthy, render, run_checks, to_json

    checks = run_checks(source=args.source, fix=args.fix)
    print(to_json(checks) if args.json else render(checks))
    return 0 if healthy(checks) else 1


def _cmd_airflow(args: argparse.Namespace) -> int:
    from cdc_backfill.runtime import project_root
    from cdc_backfill.standalone import run_standalone

    return run_standalone(project_root(), port=args.port, host=args.host, verbose=args.verbose)


def _cmd_dags(args: argparse.Namespace) -> int:
    from cdc_backfill.airflow.dags import DagFileExists, write_dag_files

    folder = Path(args.into)
    try:
        written = write_dag_files(folder, force=args.force)
    except DagFileExists as exc:
        print(f"cdc-backfill dags: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    print(f"{len(written)} DAG files in {folder}: Airflow reads them where its dags_folder is that folder "
          f"(AIRFLOW__CORE__DAGS_FOLDER={folder.resolve()})", file=sys.stderr)  # fmt: skip
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from cdc_backfill.demo import run_demo, stop_demo

    if args.stop:
        stopped = stop_demo(Path(args.folder))
        print(f"the demo's PostgreSQL in {args.folder} " + ("stopped" if stopped else "was not running"))
        return 0
    return run_demo(
        Path(args.folder), rows=args.rows, readers=args.readers, verbose=args.verbose, keep=args.keep,
        lake=args.lake, kafka=args.kafka,
    )  # fmt: skip


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
    for add_parser in _command_groups():
        add_parser(sub)
    return parser


def _command_groups() -> list[Callable[[argparse._SubParsersAction], None]]:  # type: ignore[type-arg]
    """Each command group's ``add_<command>_parser``, in the order ``--help`` lists the commands; the
    other modules of the command line are imported only when a parser is built."""
    from cdc_backfill.cli.capture import add_capture_parser
    from cdc_backfill.cli.ingest import add_ingest_parser
    from cdc_backfill.cli.reconcile import add_reconcile_parser
    from cdc_backfill.cli.signals import add_signal_parser
    from cdc_backfill.cli.snapshot import add_snapshot_parser
    from cdc_backfill.cli.state import add_state_parser
    from cdc_backfill.cli.verify import add_verify_parser

    return [
        add_doctor_parser,
        add_events_parser,
        add_signal_parser,
        add_capture_parser,
        add_snapshot_parser,
        add_verify_parser,
        add_ingest_parser,
        add_state_parser,
        add_demo_parser,
        add_airflow_parser,
        add_dags_parser,
        add_reconcile_parser,
    ]


def add_doctor_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
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
        help="the source database's URL, postgresql://user:password@host:5432/db (default: "
        "CDC_BACKFILL_SOURCE_URL, the config file, else an embedded server started for the check)",
    )
    doctor.add_argument("--fix", action="store_true", help="migrate Airflow's metadata DB if needed")
    doctor.add_argument("--json", action="store_true", help="print the checks as JSON")
    doctor.set_defaults(func=_cmd_doctor)


def add_events_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    events = sub.add_parser("events", help="read change events in any supported format")
    events_sub = events.add_subparsers(dest="events_command", metavar="ACTION", required=True)
    parse = events_sub.add_parser(
        "parse",
        help="print one canonical event per line (JSON); quarantined records go to stderr",
        description="Parse Debezium (PostgreSQL, SQL Server, Oracle, MySQL) or DataWorks JSON records into "
        "canonical events: collection, op (c/u/d/r/t/m/h), key, before, after, unchanged, position, "
        "source_ts_ms. Exit 1 if any record was quarantined.",
        epilog="example: cdc-backfill events parse --collection INVENTORY.CUSTOMERS oracle-topic.jsonl",
    )
    parse.add_argument(
        "files", nargs="+", metavar="FILE", help="JSON-lines files (or a JSON document with an events list)"
    )
    parse.add_argument(
        "--format", choices=["auto", "debezium", "dataworks"], default="auto", help="default: auto"
    )
    parse.add_argument("--collection", help="the table of records that do not name one (the topic's table)")
    parse.add_argument(
        "--key-columns",
        action="append",
        default=[],
        metavar="COLLECTION=COL,...",
        help="key of a collection whose records were landed without their Kafka key (repeatable)",
    )
    parse.set_defaults(func=_cmd_events_parse)


def add_demo_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    demo = sub.add_parser(
        "demo",
        help="the whole product on this machine: embedded PostgreSQL, writer, capture, snapshot, "
        "reconcile, verify",
        epilog="examples:\n  cdc-backfill demo\n  cdc-backfill demo --rows 50000 --folder /tmp/demo\n"
        "  cdc-backfill demo --keep          # then the printed commands; cdc-backfill demo --stop\n"
        "  cdc-backfill demo --lake s3://my-bucket/demo\n  cdc-backfill demo --kafka\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument("--folder", default=".cdc/demo", help="where the demo's server, landing zone and "
                      "state go; emptied first (default .cdc/demo)")  # fmt: skip
    demo.add_argument("--lake", metavar="URI", help="put the landing zone and state here instead of the "
                      "folder: s3://bucket/prefix (emptied first; AWS_* settings as for every command)")  # fmt: skip
    demo.add_argument("--keep", action="store_true", help="leave the demo's PostgreSQL running, to try "
                      "signal, snapshot, capture and verify on it (its URL is printed)")  # fmt: skip
    demo.add_argument("--stop", action="store_true", help="stop the PostgreSQL a demo --keep left running")
    demo.add_argument("--rows", type=int, default=200_000, help="rows seeded over both tables (200000)")
    demo.add_argument("--readers", type=int, default=2, help="snapshot readers (2)")
    demo.add_argument("--kafka", action="store_true", help="the stream through a local Kafka broker and Kafka "
                      "Connect running Debezium (their jars fetched with Maven on first use)")  # fmt: skip
    demo.set_defaults(func=_cmd_demo)


def add_airflow_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    air = sub.add_parser(
        "airflow",
        help="start Airflow (standalone) with this checkout's DAGs and plugin; `make airflow` runs it",
        description="airflow standalone with the project's dags/ and plugins/, no example DAGs, AIRFLOW_HOME "
        ".airflow, spark_default and (when a source is configured) cdc_source wired; prints the URL "
        "and the login. Any AIRFLOW_* variable you set wins. Ctrl-C stops it.",
        epilog="examples:\n  make airflow\n  cdc-backfill airflow --port 8081\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    air.add_argument("--port", type=int, default=8080, help="the UI's port (default 8080)")
    air.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    air.set_defaults(func=_cmd_airflow)


def add_dags_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    dags = sub.add_parser(
        "dags",
        help="write the product's DAG files (one import and one call each) into your Airflow's dags folder",
        description="Write cdc_incremental_snapshot, cdc_capture_postgres, cdc_stop_snapshot, cdc_doctor and "
        "the scheduled backfills' DAG file into a folder. Each builds its DAG from the installed package "
        "(cdc_backfill.airflow.dags), so an upgrade of the package upgrades the DAGs.",
        epilog="example: cdc-backfill dags --into $AIRFLOW_HOME/dags",
    )
    dags.add_argument("--into", required=True, metavar="FOLDER", help="the folder (created if missing)")
    dags.add_argument("--force", action="store_true", help="overwrite DAG files of the same name")
    dags.set_defaults(func=_cmd_dags)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args.verbose)
    from cdc_backfill.runtime import apply_defaults

    apply_defaults()
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader of our output went away (`... | head`): not an error worth a traceback
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:
        if args.verbose:  # the traceback, and still the exit status that says what kind of failure
            import traceback

            traceback.print_exc()
        # Bad input and unreachable servers end in one line, never a traceback (-v shows it).
        print(
            f"cdc-backfill {args.command}: {error_line(exc, getattr(args, 'source', None))}", file=sys.stderr
        )
        return error_status(exc)


def error_line(exc: BaseException, source: str | None = None) -> str:
    """One line saying what went wrong (pure: tested with the exceptions users meet); ``source``: the
    URL the command was given, named (password masked) when it cannot be reached."""
    from cdc_backfill.config import ConfigError, mask_url
    from cdc_backfill.extras import missing_extra
    from cdc_backfill.pg.refusals import source_refusal
    from cdc_backfill.signals.model import SignalError
    from cdc_backfill.spark.packages import ConnectorError
    from cdc_backfill.storage import StorageError

    if isinstance(exc, ConfigError | SignalError | StorageError | ConnectorError):
        return str(exc)
    extra = missing_extra(exc)
    if extra:
        return extra
    first = (str(exc).strip().splitlines() or [""])[0]
    name = type(exc).__name__
    missing = missing_bookkeeping_table(exc)
    if missing:
        from cdc_backfill.signals.store import missing_tables_hint

        return missing_tables_hint(missing)
    refusal = source_refusal(exc, source or configured_source())
    if refusal:
        return str(refusal)
    if name == "OperationalError":  # SQLAlchemy's and psycopg2's: the server was not reached
        detail = first.removeprefix("(psycopg2.OperationalError) ")
        where = f" {mask_url(source)}" if source else ""
        return (
            f"cannot reach the source{where}: {mask_url(detail)} (check the URL, the server and the network)"
        )
    if is_store_error(exc):
        return (
            f"cannot reach the lake on S3: {first} (check AWS_ENDPOINT_URL, the credentials, the bucket and "
            "the network)"
        )
    return f"{name}: {mask_url(first)} (run with -v for the details)"


def configured_source() -> str | None:
    """The source named by the environment or the config file, None when none is (or it is unusable)."""
    from cdc_backfill.config import ConfigError, resolve_source

    try:
        setting = resolve_source()
    except ConfigError:
        return None
    return setting.url if setting else None


def is_store_error(exc: BaseException) -> bool:
    """An object store that failed to answer (pyarrow's S3 filesystem says "AWS Error"), pure."""
    return isinstance(exc, OSError) and "AWS Error" in str(exc)


def missing_bookkeeping_table(exc: BaseException) -> str | None:
    """The name of the project's table (signal, status, progress, slot binding) whose absence ``exc``
    reports, or None (pure)."""
    import re

    orig = getattr(exc, "orig", None)
    if getattr(orig, "pgcode", None) != "42P01":  # undefined_table
        return None
    m = re.search(r'relation "([^"]+)" does not exist', str(orig))
    name = m.group(1) if m else ""
    return (
        name if re.search(r"(^|\.)cdc_(signal|signal_status|snapshot_progress|slot_binding)$", name) else None
    )


def error_status(exc: BaseException) -> int:
    """2 for bad input (a missing signal table or an extra not installed too), 3 for a source or a lake
    that cannot be reached, 1 for anything else."""
    from cdc_backfill.config import ConfigError
    from cdc_backfill.extras import missing_extra
    from cdc_backfill.pg.refusals import source_refusal
    from cdc_backfill.signals.model import SignalError
    from cdc_backfill.storage import StorageError

    if isinstance(exc, ConfigError | SignalError | StorageError) or missing_bookkeeping_table(exc):
        return 2
    if source_refusal(exc):  # the source's settings or privileges: the user's to change
        return 2
    if missing_extra(exc):
        return 2
    return 3 if type(exc).__name__ == "OperationalError" or is_store_error(exc) else 1
