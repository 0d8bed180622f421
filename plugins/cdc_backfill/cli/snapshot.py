"""``cdc-backfill snapshot ...``: run the engine, show its progress. Thin: the work is in cdc_backfill.snapshot."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from cdc_backfill.config import SOURCE_HELP, require_source_url
from cdc_backfill.lakepath import lake_path
from cdc_backfill.snapshot.compression import CHUNK_COMPRESSIONS

if TYPE_CHECKING:
    from cdc_backfill.snapshot.status import CollectionStatus

SNAPSHOT_EPILOG = """examples:
  cdc-backfill snapshot run --landing lake/ --once --readers 2     # run accepted signals to the end, then exit
  cdc-backfill snapshot run --landing lake/ --follow               # keep running, pick up new signals
  cdc-backfill snapshot status                                     # per collection: chunks, rows, rate, time left
  cdc-backfill snapshot status --json
"""


def _cmd_run(args: argparse.Namespace) -> int:
    from cdc_backfill.snapshot.engine import SnapshotEngine, SnapshotError
    from cdc_backfill.snapshot.status import render, summarize

    try:
        engine = SnapshotEngine(
            require_source_url(args.source),
            lake_path(args.landing),
            readers=args.readers,
            signal_table=args.signal_table,
            chunk_compression=args.chunk_compression,
        )
        engine.signals.require_tables()
        engine.progress.init()
        failed_before = _failed(summarize(engine.progress.ranges()))
        engine.run(follow=args.follow)
    except SnapshotError as exc:
        print(f"snapshot refused: {exc}", file=sys.stderr)
        return 2
    statuses = summarize(engine.progress.ranges())
    print(render(statuses))
    # a run that could not read what it was asked never reports success
    failed = [s for s in statuses if (s.signal_id, s.collection) in _failed(statuses) - failed_before]
    for s in failed:
        print(
            f"snapshot {s.signal_id}: {s.collection} failed: {s.reason or 'no reason recorded'}",
            file=sys.stderr,
        )
    return 1 if failed else 0


def _failed(statuses: list[CollectionStatus]) -> set[tuple[str, str]]:
    from cdc_backfill.signals.statuses import RangeStatus

    return {(s.signal_id, s.collection) for s in statuses if s.status == RangeStatus.FAILED}


def _cmd_status(args: argparse.Namespace) -> int:

    from cdc_backfill.signals.store import SignalStore
    from cdc_backfill.snapshot.queries import read_progress
    from cdc_backfill.snapshot.status import render, summarize

    store = SignalStore(require_source_url(args.source), args.signal_table)
    store.require_tables()
    # no progress table yet (the engine never ran here): no ranges, "no snapshots yet"
    statuses = summarize(read_progress(store.sa_engine, store.schema), paused=store.paused())
    print(json.dumps([s.to_dict() for s in statuses], indent=2) if args.json else render(statuses))
    return 0


def add_snapshot_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    snap = sub.add_parser(
        "snapshot", help="run the incremental snapshot engine, show progress", epilog=SNAPSHOT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    kinds = snap.add_subparsers(dest="snapshot_command", metavar="ACTION", required=True)
    run = kinds.add_parser("run", help="execute accepted execute-snapshot signals", epilog=SNAPSHOT_EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    run.add_argument("--source", metavar="URL", help=SOURCE_HELP)
    run.add_argument(
        "--landing", required=True, metavar="DIR", help="chunks go to DIR/snapshots/<collection>/"
    )
    run.add_argument("--readers", type=int, default=1, metavar="N", help="parallel readers (default 1)")
    run.add_argument(
        "--chunk-compression", choices=CHUNK_COMPRESSIONS, default="auto",
        help="of the chunk files: none spends no CPU, zstd lands a third of the bytes (default auto: none on a"
        " local landing, zstd on s3://)",
    )  # fmt: skip
    run.add_argument("--signal-table", metavar="SCHEMA.TABLE")
    mode = run.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="run what is there to the end, then exit (default)")
    mode.add_argument("--follow", action="store_true", help="keep running until SIGTERM/SIGINT")
    run.set_defaults(func=_cmd_run)
    st = kinds.add_parser("status", help="per collection: chunks, rows, rate, estimated time left")
    st.add_argument("--source", metavar="URL", help="the source database (else CDC_BACKFILL_SOURCE_URL)")
    st.add_argument(
        "--signal-table", metavar="SCHEMA.TABLE", help="the signal table (default public.cdc_signal)"
    )
    st.add_argument("--json", action="store_true", help="status as JSON")
    st.set_defaults(func=_cmd_status)
