"""``cdc-backfill reconcile``: the Spark job through spark-submit, its steps on stderr, its summary on
stdout."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cdc_backfill.lakepath import lake_path
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE


def _cmd_reconcile(args: argparse.Namespace) -> int:
    from cdc_backfill.landing.stream import unmoved_json_reason
    from cdc_backfill.spark.submit import printed_command, reconcile_command, submit_environ

    landing = lake_path(args.landing)  # a folder or s3://bucket/prefix (StorageError: one line, exit 2)
    lake_path(args.state)
    if not landing.is_dir():
        print(f"cdc-backfill reconcile: no landing zone at {args.landing} (give the folder or "
              "s3://bucket/prefix the capture and snapshots write to)", file=sys.stderr)  # fmt: skip
        return 2
    # refused here, before a Spark session starts; the job refuses the same. With --ingest the JSON is
    # the job's first step, and a collection it alone holds is known only after it.
    unmoved = None if args.ingest else unmoved_json_reason(landing, args.signal_table)
    if unmoved:
        print(f"cdc-backfill reconcile: {unmoved}", file=sys.stderr)
        return 2
    unknown = None if args.ingest else unknown_collections(landing, args.collections or [], args.signal_table)
    if unknown:
        print(f"cdc-backfill reconcile: {unknown}", file=sys.stderr)
        return 2
    if _nothing_new(args):
        return 0
    cmd = reconcile_command(
        args.landing, args.state, args.collections, master=args.master, verbose=args.verbose,
        signal_table=args.signal_table, ingest=args.ingest, small=_small(args),
    )  # fmt: skip
    if args.print_command:
        print(printed_command(cmd, args.master))
        return 0
    return submit_and_relay(
        cmd, submit_environ(args.master), on_summary=lambda doc: reread_hint(doc, args.state)
    )


def _nothing_new(args: argparse.Namespace) -> bool:
    """A run that would change nothing (with ``--ingest``: and has no JSON to ingest) is not run: no
    Spark, no new version (older ones stay kept). Its summary says so, in the job's form."""
    from cdc_backfill.landing.stream import ingest_paths
    from cdc_backfill.reconcile.runs import nothing_new

    landing = lake_path(args.landing)
    if args.print_command or (args.ingest and ingest_paths(landing, None)):
        return False
    if not nothing_new(landing, lake_path(args.state), args.collections or [], args.signal_table):
        return False
    print(f"cdc-backfill reconcile: nothing new in {args.landing} since the state's position: no version written",
          file=sys.stderr)  # fmt: skip
    print(json.dumps({"events": 0, "collections": {}, "nothing_new": True}))
    return True


def _small(args: argparse.Namespace) -> bool:
    """Whether the run is small enough for the driver JVM's first compiler only (``reconcile.run_size``)."""
    from cdc_backfill.reconcile.run_size import first_compiler_only

    return first_compiler_only(
        lake_path(args.landing),
        lake_path(args.state),
        args.collections or [],
        args.signal_table,
        ingest=args.ingest,
    )


def unknown_collections(landing: Path, asked: list[str], signal_table: str) -> str | None:
    """Why some of the ``--collections`` asked for are not in the landing zone (with the closest names),
    before any Spark starts; None when all are."""
    import difflib

    from cdc_backfill.landing.columns import landed_collections

    held = landed_collections(landing, signal_table)
    missing = [c for c in asked if c not in held]
    if not missing:
        return None
    hints = []
    for c in missing:
        close = difflib.get_close_matches(c, held, n=2, cutoff=0.6)
        hints.append(f"{c} (did you mean {' or '.join(close)}?)" if close else c)
    return f"{landing} holds nothing of {', '.join(hints)}: no log, no snapshot chunk; it holds " + (
        ", ".join(held[:10]) or "no collection yet"
    )


def reread_hint(summary: dict[str, Any], state: str) -> None:
    """Offer the re-read of rows the stream never sent a value for (see ``reconcile.reread``)."""
    incomplete = {c: i.get("rows_with_unknown_columns", 0) for c, i in summary.get("collections", {}).items()}
    for coll, n in sorted(incomplete.items()):
        if n:
            print(
                f"cdc-backfill reconcile: {n:,} row(s) of {coll} miss a value the stream never sent (a key change "
                f"that left a TOASTed column out); re-read them: cdc-backfill signal reread --state {shlex.quote(state)}",
                file=sys.stderr,
            )


OUT_OF_MEMORY = "java.lang.OutOfMemoryError"
OUT_OF_MEMORY_HINT = (
    "cdc-backfill: the Spark driver ran out of memory (java.lang.OutOfMemoryError above): run it again "
    "with a larger heap, for example SPARK_DRIVER_MEMORY=4g before the command (2g by default on a local "
    "master), or spark.driver.memory in spark-defaults.conf"
)


def submit_and_relay(
    cmd: list[str],
    env: dict[str, str],
    on_summary: Callable[[dict[str, Any]], None] | None = None,
    stop_job: str | None = None,
) -> int:
    """Run a job's spark-submit; its exit code. spark-submit merges the job's stderr into its stdout:
    the step lines go back to stderr, and stdout carries only the run summary (one JSON line), as a
    script reading it expects. ``stop_job``: the job's script, whose driver is handed a SIGTERM this
    process receives (a job that runs until told to stop, and then ends its round cleanly)."""
    from cdc_backfill.spark.log4j import is_jvm_noise
    from cdc_backfill.spark.packages import unresolved

    # the JVM's own stderr too, so that its noise (``is_jvm_noise``) is left out
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if stop_job is not None:
        signal.signal(signal.SIGTERM, lambda *_: stop_driver(proc.pid, stop_job))
    summary = None
    out_of_memory = False
    fetch = None  # a connector Spark could not fetch: said in one line, instead of Ivy's report and trace
    assert proc.stdout is not None
    for line in proc.stdout:
        if is_summary_line(line):
            summary = line
        elif fetch is None and not is_jvm_noise(line):
            fetch = unresolved(line)
            if fetch is None:
                out_of_memory = out_of_memory or OUT_OF_MEMORY in line
                sys.stderr.write(line)
                sys.stderr.flush()
    code = proc.wait()
    if code != 0 and fetch:
        print(fetch, file=sys.stderr)
    elif code != 0 and out_of_memory:  # the traces above are Spark's: say what to do, last
        print(OUT_OF_MEMORY_HINT, file=sys.stderr)
    if summary is not None:
        sys.stdout.write(summary)
        if on_summary is not None:
            on_summary(json.loads(summary))
    return code


def stop_driver(submit_pid: int, job: str) -> None:
    """SIGTERM to the Python driver of ``job`` that spark-submit (``submit_pid``) started, not to the JVM:
    the driver finishes what it is doing and stops its session itself; a JVM told first would stop the
    session under it. Where no such driver runs (yet), spark-submit gets it."""
    import psutil

    try:
        children = psutil.Process(submit_pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return
    for child in children:
        try:
            if any(part.endswith(job) for part in child.cmdline()):
                child.send_signal(signal.SIGTERM)
                return
        except psutil.Error:
            continue
    with contextlib.suppress(ProcessLookupError):
        os.kill(submit_pid, signal.SIGTERM)


def is_summary_line(line: str) -> bool:
    """The reconcile job's run summary: one JSON object with its counts (pure)."""
    if not line.startswith("{"):
        return False
    try:
        doc = json.loads(line)
    except ValueError:
        return False
    return isinstance(doc, dict) and "events" in doc and "collections" in doc


def add_reconcile_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    rec = sub.add_parser(
        "reconcile",
        help="rebuild each collection's state from the typed log and READ chunks (Spark)",
        epilog="examples:\n  cdc-backfill reconcile --landing lake/ --state state/\n"
        "  cdc-backfill reconcile --landing lake/ --state state/ --ingest   # a Debezium JSON landing\n"
        "  cdc-backfill reconcile --landing s3://bucket/landing --state s3://bucket/state --master spark://host:7077",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rec.add_argument(
        "--landing",
        required=True,
        metavar="DIR",
        help="the landing zone the capture and snapshots write (a folder or s3://bucket/prefix)",
    )
    rec.add_argument(
        "--state",
        required=True,
        metavar="DIR",
        help="where the state's versions go (created; a folder or s3://bucket/prefix)",
    )
    rec.add_argument(
        "--collections",
        nargs="*",
        metavar="COLLECTION",
        help="only these (schema.table); default: every one landed",
    )
    rec.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    rec.add_argument(
        "--signal-table",
        default=DEFAULT_SIGNAL_TABLE,
        metavar="SCHEMA.TABLE",
        help="the signal table whose watermarks bound the windows (default public.cdc_signal)",
    )
    rec.add_argument(
        "--ingest",
        action="store_true",
        help="first ingest the JSON files in the landing's stream/ (as `cdc-backfill ingest --landing DIR`, "
        "typed by what the landing describes), in the same Spark job",
    )
    rec.add_argument(
        "--print-command", action="store_true", help="print the spark-submit command, run nothing"
    )
    rec.set_defaults(func=_cmd_reconcile)
