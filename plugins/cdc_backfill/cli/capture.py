"""``cdc-backfill capture ...``: thin calls into cdc_backfill.capture."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from cdc_backfill.capture.debezium.settings import DEFAULT_SLOT
from cdc_backfill.config import SOURCE_HELP, require_source_url
from cdc_backfill.lakepath import lake_path

CAPTURE_EPILOG = """examples:
  cdc-backfill capture postgres --source postgresql+psycopg2://cdc@db/app --landing /lake/app --drain
  cdc-backfill capture postgres --landing /lake/app --collections 'public\\.orders' 'public\\.customers' --follow
  cdc-backfill capture status --landing /lake/app
  cdc-backfill capture debezium --source postgresql://cdc@db/app --landing lake --collections public.orders --drain
  cdc-backfill capture debezium status --landing lake
  cdc-backfill capture kafka --bootstrap-servers broker:9092 --topics 'app\\..*' --landing lake --drain
"""


def _cmd_postgres(args: argparse.Namespace) -> int:
    from cdc_backfill.capture.postgres.loop import CaptureError, PostgresCapture

    collections = args.collections
    try:
        cap = PostgresCapture(
            require_source_url(args.source),
            lake_path(args.landing),
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
    from cdc_backfill.capture.postgres.loop import CaptureError, capture_status

    try:
        status = capture_status(
            require_source_url(args.source), lake_path(args.landing) if args.landing else None, args.slot
        )
    except CaptureError as exc:
        print(str(exc), file=sys.stderr)
        return 3
    return _print_status(status, args.json)


def _cmd_debezium(args: argparse.Namespace) -> int:
    from cdc_backfill.capture.debezium.connector import DebeziumCaptureError, DebeziumRefused
    from cdc_backfill.capture.debezium.preflight import debezium_status, start
    from cdc_backfill.capture.debezium.settings import DebeziumConfigError, DebeziumSettings

    if args.action == "status":
        return _debezium_status(args, debezium_status)
    if args.action is not None:
        print(
            f"cdc-backfill capture debezium: unknown action {args.action!r} (status, or none)",
            file=sys.stderr,
        )
        return 2
    if args.drain == args.follow:
        print("cdc-backfill capture debezium: give --drain or --follow", file=sys.stderr)
        return 2
    try:
        extra = dict(_property(p, DebeziumConfigError, "a Debezium property") for p in args.property)
        settings = DebeziumSettings(
            url=require_source_url(args.source),
            collections=tuple(args.collections or ()),
            signal_table=args.signal_table,
            landing=lake_path(args.landing),
            name=args.name,
            slot=args.slot,
            publication=args.publication,
            chunk_size=args.chunk_size,
            watermarking=args.watermarking,
            poll_ms=args.poll_ms,
            extra=extra,
        )
        summary = start(
            settings, drain=args.drain, until_snapshots=tuple(args.until_snapshot or ()), stop_on_signals=True
        )
    except (DebeziumConfigError, DebeziumRefused) as exc:
        print(f"capture refused: {exc}", file=sys.stderr)
        return 2
    except DebeziumCaptureError as exc:
        print(f"capture failed: {exc}", file=sys.stderr)
        return 1
    ended = ", ".join(f"{k} {v.lower()}" for k, v in summary.snapshots.items())
    print(
        f"{summary.records:,} records landed in {summary.files} files"
        + (f", {summary.redelivered:,} delivered again skipped" if summary.redelivered else "")
        + (f"; snapshots: {ended}" if ended else "")
    )
    print(f"next: cdc-backfill ingest --landing {shlex.quote(args.landing)}")
    return 0


def _cmd_kafka(args: argparse.Namespace) -> int:
    from cdc_backfill.cli.reconcile import submit_and_relay
    from cdc_backfill.config import SOURCE_URL_ENV, ConfigError, resolve_source
    from cdc_backfill.ingest.column_sources import ColumnsError, read_column_types
    from cdc_backfill.kafka.topics import PROPERTIES_ENV, Broker, KafkaError, partitions
    from cdc_backfill.spark.submit import capture_kafka_command, printed_command, submit_environ

    def refuse(message: str) -> int:
        print(f"cdc-backfill capture kafka: {message}", file=sys.stderr)
        return 2

    try:
        given = Broker.from_environ(args.bootstrap_servers)  # CDC_BACKFILL_KAFKA_PROPERTIES, if set
        broker = Broker(
            args.bootstrap_servers,
            {
                **given.properties,
                **dict(_property(p, KafkaError, "a Kafka client setting") for p in args.property),
            },
        )
        if args.column_types:
            read_column_types(Path(args.column_types))  # a bad file is refused before Spark starts
        setting = resolve_source(args.source)
        if not args.print_command:
            partitions(
                broker, args.topics
            )  # a broker that is down, topics that do not exist: now, not in Spark
    except (ColumnsError, ConfigError, KafkaError) as exc:
        return refuse(str(exc))
    cmd = capture_kafka_command(
        args.landing, args.bootstrap_servers, args.topics, follow=args.follow, interval=args.interval,
        master=args.master, catalog=setting is not None, column_types=args.column_types,
        signal_table=args.signal_table, skip_lost_offsets=args.skip_lost_offsets, verbose=args.verbose,
    )  # fmt: skip
    if args.print_command:
        print(printed_command(cmd, args.master))
        if args.property:  # secrets are never printed: the job reads them from the environment
            print(f"cdc-backfill capture kafka: the --property settings are not in the command above; export "
                  f"{PROPERTIES_ENV} as a JSON object of them first", file=sys.stderr)  # fmt: skip
        return 0
    lake_path(args.landing).mkdir(parents=True, exist_ok=True)
    env = {**submit_environ(args.master), **broker.environ()}
    if setting is not None:
        env[SOURCE_URL_ENV] = setting.url  # not on the command line, where ps would show its password
    return submit_and_relay(cmd, env, stop_job="capture_kafka.py" if args.follow else None)


def _property(text: str, error: type[Exception], what: str) -> tuple[str, str]:
    """``--property KEY=VALUE`` as (key, value); ``error`` names the option's key alone, never a value
    (a password, say)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise error(f"--property {text.split('=')[0]!r}: write KEY=VALUE ({what})")
    return key.strip(), value


def _debezium_status(args: argparse.Namespace, debezium_status) -> int:  # type: ignore[no-untyped-def]
    from cdc_backfill.capture.postgres.loop import CaptureError
    from cdc_backfill.config import resolve_source

    setting = resolve_source(args.source)
    try:
        status = debezium_status(lake_path(args.landing), setting.url if setting else None, args.slot)
    except CaptureError as exc:
        print(str(exc), file=sys.stderr)
        return 3
    return _print_status(status, args.json)


def _print_status(status: dict, as_json: bool) -> int:
    if as_json:
        print(json.dumps(status, indent=2))
    else:
        for k, v in status.items():
            print(f"{k:>16}: {v}")
    return 0


def add_capture_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from cdc_backfill.capture.postgres.loop import DEFAULT_PUBLICATION, DEFAULT_SLOT

    cap = sub.add_parser(
        "capture",
        help="stream a source's changes into the landing zone",
        epilog=CAPTURE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = cap.add_subparsers(dest="capture_command", metavar="ACTION", required=True)
    pg = kinds.add_parser(
        "postgres",
        help="pgoutput logical replication to the typed event log",
        epilog=CAPTURE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pg.add_argument("--source", metavar="URL", help=SOURCE_HELP)
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
    pg.add_argument("--signal-table", metavar="SCHEMA.TABLE", help="the signal table (always captured)")
    pg.add_argument("--roll-mb", type=float, default=64, help="finish a file at this size (default 64)")
    pg.add_argument("--roll-seconds", type=float, default=30, help="or at this age (default 30)")
    mode = pg.add_mutually_exclusive_group(required=True)
    mode.add_argument("--drain", action="store_true", help="land everything committed until now, then exit 0")
    mode.add_argument("--follow", action="store_true", help="run until SIGTERM/SIGINT, then stop cleanly")
    pg.set_defaults(func=_cmd_postgres)
    _add_debezium_parser(kinds)
    _add_kafka_parser(kinds)
    st = kinds.add_parser("status", help="slot lag, last confirmed LSN, files landed")
    st.add_argument("--source", metavar="URL", help="the source database (else CDC_BACKFILL_SOURCE_URL)")
    st.add_argument("--landing", metavar="DIR", help="also count what this landing zone holds")
    st.add_argument("--slot", default=DEFAULT_SLOT, help=f"the replication slot (default {DEFAULT_SLOT})")
    st.add_argument("--json", action="store_true", help="status as JSON")
    st.set_defaults(func=_cmd_status)


def _add_debezium_parser(kinds: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from cdc_backfill.capture.debezium.settings import WATERMARKING

    dbz = kinds.add_parser(
        "debezium",
        help="run a Debezium connector (embedded, no Kafka) and land what it emits; `status` reports",
        epilog=CAPTURE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    dbz.add_argument("action", nargs="?", metavar="status", help="report instead of running")
    dbz.add_argument(
        "--source", metavar="URL", help="postgresql://, mssql://, oracle:// or mysql:// (default: config)"
    )
    dbz.add_argument(
        "--landing", required=True, metavar="DIR", help="the landing zone (batches go to DIR/stream)"
    )
    dbz.add_argument(
        "--collections", nargs="+", metavar="SCHEMA.TABLE", help="tables to capture (default: every table)"
    )
    dbz.add_argument(
        "--signal-table",
        default="public.cdc_signal",
        metavar="SCHEMA.TABLE",
        help="default public.cdc_signal",
    )
    dbz.add_argument("--name", default="cdc_backfill", help="the connector's name and topic prefix")
    dbz.add_argument("--slot", default=DEFAULT_SLOT, help="PostgreSQL replication slot")
    dbz.add_argument("--publication", default=DEFAULT_SLOT, help="PostgreSQL publication")
    dbz.add_argument("--chunk-size", type=int, default=1024, help="rows per snapshot chunk (default 1024)")
    dbz.add_argument("--watermarking", choices=WATERMARKING, default="insert_insert")
    dbz.add_argument(
        "--poll-ms", type=int, default=500, help="poll.interval.ms: idle time between chunks (default 500)"
    )
    dbz.add_argument(
        "--property", action="append", default=[], metavar="KEY=VALUE", help="any Debezium property"
    )
    dbz.add_argument(
        "--until-snapshot", nargs="+", metavar="SIGNAL_ID", help="--drain only after these snapshots ended"
    )
    dbz.add_argument("--json", action="store_true", help="status as JSON")
    dbz.add_argument("--drain", action="store_true", help="land everything committed until now, then exit 0")
    dbz.add_argument("--follow", action="store_true", help="run until SIGTERM/SIGINT, then stop cleanly")
    dbz.set_defaults(func=_cmd_debezium)


def _add_kafka_parser(kinds: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE

    kafka = kinds.add_parser(
        "kafka",
        help="read Debezium and DataWorks topics into the typed event log, exactly once (Spark)",
        epilog=CAPTURE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kafka.add_argument("--bootstrap-servers", required=True, metavar="HOST:PORT[,HOST:PORT]",
                       help="the Kafka brokers to start from")  # fmt: skip
    kafka.add_argument("--topics", required=True, metavar="REGEX",
                       help="topics whose whole name this matches: data, signal, heartbeat topics alike")  # fmt: skip
    kafka.add_argument(
        "--landing", required=True, metavar="DIR", help="the landing zone whose log receives the events"
    )
    kafka.add_argument("--source", metavar="URL",
                       help="type collections the landing does not describe from this catalog (records without schemas)")  # fmt: skip
    kafka.add_argument("--column-types", metavar="FILE", help="JSON: each collection's key and column types")
    kafka.add_argument("--signal-table", default=DEFAULT_SIGNAL_TABLE, metavar="SCHEMA.TABLE",
                       help="the signal table (default public.cdc_signal)")  # fmt: skip
    kafka.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                       help="a Kafka client setting, as Kafka's Java client names it (security.protocol, "
                       "sasl.jaas.config, ...); never printed")  # fmt: skip
    kafka.add_argument("--skip-lost-offsets", action="store_true",
                       help="go on past offsets retention deleted before they landed (after a new snapshot)")  # fmt: skip
    kafka.add_argument(
        "--interval", type=float, default=1.0, help="--follow: seconds between rounds (default 1)"
    )
    kafka.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    kafka.add_argument(
        "--print-command", action="store_true", help="print the spark-submit command, run nothing"
    )
    kafka.add_argument("-v", "--verbose", action="store_true", help="the job's steps in detail")
    mode = kafka.add_mutually_exclusive_group(required=True)
    mode.add_argument("--drain", action="store_true", help="land every record written until now, then exit 0")
    mode.add_argument("--follow", action="store_true", help="run until SIGTERM/SIGINT, then stop cleanly")
    kafka.set_defaults(func=_cmd_kafka)
