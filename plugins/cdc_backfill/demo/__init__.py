"""``cdc-backfill demo``: the whole product on this machine, in one command.

An embedded PostgreSQL with two sample tables (``customers``: a text key; ``order_lines``: a composite
key; about 200k rows), a writer that keeps inserting, updating, deleting and changing keys, the capture
draining the change stream all along, an ``execute-snapshot`` signal read by the snapshot engine with 2
readers (with a live progress display), then the Spark reconcile and ``verify`` of every range. It ends
with a summary table and leaves everything in the demo folder.

Only the entry point does I/O; the SQL and the summary are built by small functions, each step of the run
is one function. The writer and the capture that run beside the snapshot are threads of their own
(``demo.workers``); the commands printed at the end are ``demo.next_steps``'s.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shlex
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from cdc_backfill.config import source_engine
from cdc_backfill.demo.kafka_stream import KafkaStream
from cdc_backfill.demo.next_steps import TABLES, next_commands
from cdc_backfill.demo.workers import Capturer, DemoWriter
from cdc_backfill.lakepath import LakePath, lake_path, rmtree
from cdc_backfill.logs import VERBOSE_FORMAT
from cdc_backfill.program import program
from cdc_backfill.runtime import project_root

if TYPE_CHECKING:
    from rich.console import Console

    from cdc_backfill.signals.store import SignalStore
    from cdc_backfill.snapshot.engine import SnapshotEngine

log = logging.getLogger(__name__)

SCHEMA_SQL = [
    "CREATE TABLE customers (email text PRIMARY KEY, name text NOT NULL, tier text, notes text)",
    "CREATE TABLE order_lines (order_id bigint, line_no int, sku text NOT NULL, qty int NOT NULL, "
    "price numeric(10,2), PRIMARY KEY (order_id, line_no))",
]


def seed_sql(rows: int) -> list[str]:
    """Half the rows in each table; emails sort unlike their numbers (a text key, byte order)."""
    half = rows // 2
    return [
        "INSERT INTO customers SELECT 'user' || i || '@example.org', 'Name ' || i, "
        f"(ARRAY['gold','silver','bronze'])[1 + i % 3], repeat('n', i % 40) FROM generate_series(1, {half}) i",
        "INSERT INTO order_lines SELECT i / 4, i % 4, 'SKU-' || (i % 997), 1 + i % 9, (i % 5000) / 100.0 "
        f"FROM generate_series(1, {half}) i",
    ]


SPARK_MASTER = "local[2]"


@dataclass
class Figures:
    rows: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    changes: int = 0
    chunks: int = 0
    snapshot_rows: int = 0
    reconcile: dict[str, Any] = field(default_factory=dict)
    verified: dict[str, dict[str, Any]] = field(default_factory=dict)


def summary_rows(f: Figures) -> list[tuple[str, str]]:
    """(what, value) lines of the closing table (pure)."""
    rec = f.reconcile.get("collections", {})
    dropped = sum(c.get("reads_dropped", 0) for c in rec.values())
    applied = sum(c.get("reads_applied", 0) for c in rec.values())
    snap = f.seconds.get("snapshot", 0.0)
    recon = f.seconds.get("reconcile", 0.0)
    lines = [
        ("rows seeded", f"{f.rows:,}"),
        ("writer changes during the run", f"{f.changes:,}"),
        ("chunks (= windows)", f"{f.chunks:,}"),
        (
            "READ rows",
            f"{f.snapshot_rows:,} in {snap:.1f} s ({f.snapshot_rows / max(snap, 1e-9):,.0f} rows/s)",
        ),
        ("READs applied / dropped", f"{applied:,} / {dropped:,} (dropped: changed inside their window)"),
        ("stream events reconciled", f"{f.reconcile.get('events', 0):,} in {recon:.1f} s"),
    ]
    for coll in TABLES:
        v = f.verified.get(coll, {})
        ok = "equal" if v.get("all_equal") else "DIFFERENT"
        lines.append(
            (
                f"verify {coll}",
                f"{ok}: {v.get('equal', 0)}/{v.get('ranges', 0)} ranges, {v.get('rows', 0):,} rows",
            )
        )
    lines.append(("total time", f"{sum(f.seconds.values()):.1f} s"))
    return lines


class _StepsShown(logging.Filter):
    """Lets warnings through, and the INFO steps of the loggers named (the reconcile's)."""

    def __init__(self, shown: tuple[str, ...]) -> None:
        super().__init__()
        self.shown = shown

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or record.name.startswith(self.shown)


@contextlib.contextmanager
def quiet_console(
    log_file: Path, verbose: bool, shown: tuple[str, ...] = ("cdc_backfill.reconcile",)
) -> Iterator[None]:
    """The engine's and the capture's step log (a line per chunk) goes to ``log_file``; the terminal
    keeps the progress display, warnings and the steps of ``shown`` (the reconcile's few lines). With
    ``verbose`` the terminal gets everything too."""
    handler = logging.FileHandler(log_file)
    handler.setFormatter(logging.Formatter(VERBOSE_FORMAT))
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    console = [
        h
        for h in root.handlers
        if isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
    ]
    project = logging.getLogger("cdc_backfill")
    project_level = project.level
    root.addHandler(handler)
    project.setLevel(logging.DEBUG if verbose else logging.INFO)
    quiet = _StepsShown(shown)
    if not verbose:
        for h in console:
            h.addFilter(quiet)
    try:
        yield
    finally:
        root.removeHandler(handler)
        handler.close()
        project.setLevel(project_level)
        for h in console:
            h.removeFilter(quiet)


def run_demo(
    folder: Path,
    rows: int = 200_000,
    readers: int = 2,
    chunk_size: int = 4096,
    verbose: bool = False,
    keep: bool = False,
    lake: str | None = None,
    kafka: bool = False,
) -> int:
    """The demo in ``folder`` (emptied first); ``keep``: its PostgreSQL keeps running afterwards;
    ``lake``: where its landing and state go instead of the folder (``s3://bucket/prefix``, emptied first
    too); ``kafka``: the stream through a local broker and Kafka Connect (``demo.kafka_stream``)."""
    from cdc_backfill.pg.embedded import EmbeddedPostgres

    EmbeddedPostgres.stop_kept(folder / "postgres")  # a server kept by an earlier demo --keep
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    root = lake_path(lake) if lake else folder
    landing, state = root / "landing", root / "state"
    if lake:
        root.mkdir(parents=True, exist_ok=True)  # a missing bucket is said now
        for old in (landing, state):  # an earlier demo's, in the same lake
            rmtree(old)
    with quiet_console(folder / "demo.log", verbose):
        return _run_demo(folder, landing, state, rows, readers, chunk_size, verbose, keep, kafka)


def stop_demo(folder: Path) -> bool:
    """Stop the PostgreSQL a ``demo --keep`` left running in ``folder``; False when none runs."""
    from cdc_backfill.pg.embedded import EmbeddedPostgres

    return EmbeddedPostgres.stop_kept(folder / "postgres")


@dataclass
class _Run:
    """What every step of one demo uses: where it prints, the source, the folders, the figures it fills."""

    console: Console
    url: str
    sa_engine: sa.Engine  # seeding, progress display and verify
    landing: LakePath
    state: LakePath
    figures: Figures


def _run_demo(
    folder: Path, landing: LakePath, state: LakePath, rows: int, readers: int, chunk_size: int,
    verbose: bool, keep: bool, kafka: bool = False,
) -> int:  # fmt: skip
    from rich.console import Console

    from cdc_backfill.pg.embedded import EmbeddedPostgres

    console = Console(soft_wrap=True)  # a long line (a URL, a command) stays one line in a log or pipe
    f = Figures(rows=rows)
    t0 = time.monotonic()
    pg = EmbeddedPostgres(folder / "postgres", settings={"max_wal_size": "1GB"}).start()
    sa_engine: sa.Engine | None = None
    stream: KafkaStream | None = None
    try:
        url = pg.url
        sa_engine = source_engine(url, pool_pre_ping=True)
        run = _Run(console, url, sa_engine, landing, state, f)
        stream = KafkaStream(folder, url, landing, TABLES) if kafka else None
        store, capturer = _set_up(run, stream)
        f.seconds["setup"] = time.monotonic() - t0
        _snapshot_while_writing(run, store, capturer, readers, chunk_size)
        _reconcile_and_verify(run, stream)
    finally:
        if stream is not None:
            stream.close()
        if sa_engine is not None:
            sa_engine.dispose()
        if keep:
            pg.detach()
        else:
            pg.stop()
    _print_summary(run, folder)
    _print_next(run, folder, keep)
    ok = all(v["all_equal"] for v in f.verified.values()) and len(f.verified) == len(TABLES)
    return 0 if ok else 1


def _set_up(run: _Run, stream: KafkaStream | None = None) -> tuple[SignalStore, Capturer | KafkaStream]:
    """Step 1: the sample tables seeded, the signal tables created, and the slot made by a first drain
    before anything changes (with ``stream``: Kafka Connect started on the source instead)."""
    from cdc_backfill.signals.store import SignalStore

    with run.sa_engine.begin() as conn:
        for stmt in [*SCHEMA_SQL, *seed_sql(run.figures.rows)]:
            conn.execute(sa.text(stmt))
    store = SignalStore(run.url)
    store.init()
    run.console.print(
        f"[bold]1.[/] embedded PostgreSQL at {run.url}: {run.figures.rows:,} rows in {', '.join(TABLES)}"
    )
    if stream is not None:
        bootstrap = stream.open()
        run.console.print(
            f"    Kafka broker at {bootstrap}; Kafka Connect with Debezium streaming to topics demo.*"
        )
        return store, stream
    capturer = Capturer(run.url, run.landing)
    capturer.drain()  # the slot exists before anything changes
    return store, capturer


def _snapshot_while_writing(
    run: _Run, store: SignalStore, capturer: Capturer | KafkaStream, readers: int, chunk_size: int
) -> None:
    """Steps 2 and 3: the snapshot of both tables while the writer changes them and the capture follows
    the stream; then the writer stops and everything committed is landed."""
    from cdc_backfill.signals.model import execute_snapshot
    from cdc_backfill.snapshot.engine import SnapshotEngine

    f = run.figures
    t1 = time.monotonic()
    writer = DemoWriter(run.url, f.rows).start()
    capturer.start()
    signal = execute_snapshot("demo-1", [t.replace(".", "\\.") for t in TABLES], chunk_size=chunk_size)
    store.send(signal)
    run.console.print(f"[bold]2.[/] writer and capture running; execute-snapshot {signal.id} sent")
    snap = SnapshotEngine(run.url, run.landing, readers=readers)
    _snapshot_with_progress(run, snap)
    f.seconds["snapshot"] = time.monotonic() - t1
    f.chunks, f.snapshot_rows = snap.chunks_written, snap.rows_written
    time.sleep(1.0)  # the writer keeps going a moment after the last window
    f.changes = writer.stop()
    capturer.stop()
    capturer.drain()  # everything committed is landed
    run.console.print(
        f"[bold]3.[/] snapshot done: {f.chunks} chunks; writer stopped after {f.changes:,} changes; stream drained"
    )


def _snapshot_with_progress(run: _Run, snap: SnapshotEngine) -> None:
    """The snapshot engine runs in a thread while the terminal shows its progress table; what it
    raised is raised here."""
    from rich.live import Live

    from cdc_backfill.snapshot.progress import ProgressStore
    from cdc_backfill.snapshot.status import render, summarize

    done = threading.Event()
    failure: list[BaseException] = []

    def snapshot() -> None:
        try:
            snap.run()
        except BaseException as exc:
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=snapshot, name="demo-snapshot", daemon=True).start()
    progress = ProgressStore(run.sa_engine, None)
    if run.console.is_terminal:
        with Live(console=run.console, refresh_per_second=4) as live:
            while not done.wait(0.5):
                live.update(render(summarize(progress.ranges())))
            live.update(render(summarize(progress.ranges())))
    else:  # a log file or a pipe: the final table once, on lines of its own
        done.wait()
        run.console.print(render(summarize(progress.ranges())))
    if failure:
        raise failure[0]


def _reconcile_and_verify(run: _Run, stream: KafkaStream | None = None) -> None:
    """Steps 4 and 5 on one Spark session: the landing reconciled into the state (with ``stream``: the
    topics landed first), then each table verified against the source, range by range."""
    from cdc_backfill.reconcile.spark.job import reconcile_landing
    from cdc_backfill.spark.session import build_session
    from cdc_backfill.verify.ranges import DEFAULT_RANGES
    from cdc_backfill.verify.spark.range_stats import verify_collection

    f = run.figures
    t2 = time.monotonic()
    run.console.print("[bold]4.[/] reconcile (Spark): its steps follow")
    spark = build_session(
        "cdc_backfill_demo", master=SPARK_MASTER, lake=[run.landing, run.state], kafka=stream is not None
    )
    try:
        if stream is not None:
            landed = stream.land(spark)
            run.console.print(
                f"    capture kafka: {landed['events']:,} events from {len(landed['topics'])} topics"
            )
        f.reconcile = reconcile_landing(spark, run.landing, run.state)
        f.seconds["reconcile"] = time.monotonic() - t2
        run.console.print(f"    state written to {run.state}")
        t3 = time.monotonic()
        for coll in TABLES:
            run.console.print(f"[bold]5.[/] verify {coll} against the source, range by range")
            _source, report = verify_collection(run.sa_engine, run.state, coll, DEFAULT_RANGES, SPARK_MASTER)
            summary = report.summary()
            f.verified[coll] = {"all_equal": report.all_equal, "ranges": summary["ranges"],
                                "equal": summary["equal"], "rows": summary["source_rows"]}  # fmt: skip
        f.seconds["verify"] = time.monotonic() - t3
    finally:
        spark.stop()


def _print_summary(run: _Run, folder: Path) -> None:
    """The closing table, the same figures in ``summary.json``, and what the folder holds."""
    from rich.table import Table

    table = Table(title="cdc_backfill demo", show_header=False)
    for what, value in summary_rows(run.figures):
        table.add_row(what, value)
    run.console.print(table)
    (folder / "summary.json").write_text(json.dumps(run.figures.__dict__, indent=2, default=str))
    where = f"{folder}" if run.landing == folder / "landing" else f"{folder} and {run.landing.parent}"
    run.console.print(
        f"\nArtifacts: {where} (landing/: the typed event log and READ chunks, state/: versions and run summaries, "
        "demo.log: every chunk's steps)\nNext:"
    )


def _print_next(run: _Run, folder: Path, keep: bool) -> None:
    """The commands to run next, as this user's shell runs them; with ``keep``, how to stop the server."""
    with_make = (Path.cwd() / "Makefile").is_file() and Path.cwd() == project_root()
    cli = program()
    plain = "postgresql://" + run.url.split("://", 1)[1]
    for cmd, what in next_commands(cli, run.state, with_make, plain if keep else None, run.landing):
        run.console.print(f"  {cmd}\n      {what}", highlight=False, markup=False, soft_wrap=True)
    if keep:
        run.console.print(
            f"PostgreSQL keeps running at {plain}; stop it with: {cli} demo --stop --folder {shlex.quote(str(folder))}",
            highlight=False, markup=False, soft_wrap=True,
        )  # fmt: skip
