"""A small incremental reconcile next to a trivial spark-submit, measured in the same run.

The demo's shape: two tables of ``--rows`` rows each (100k by default) in a throwaway PostgreSQL,
captured from the start, snapshotted by the engine, a first reconcile; then ``--changes`` changes
(updates, inserts, deletes over both tables), drained, and the second reconcile is timed. Each
landing format the capture writes (``--format``: the typed log, JSON lines, or both, each with its
own slot over the same changes) is reconciled by the real job through ``spark-submit``, as the
Airflow task runs it; a JSON landing is first moved into the log by ``ingest``, in the same job as the
Airflow task runs it (``--ingest``), and for the third reconcile also as a spark-submit of its own
before the reconcile's, as typed by hand (the reconcile reads typed data only). The reference: a trivial ``spark-submit`` (session start, read one Parquet
file, count).

Beside each time, what the run wrote: the state's files it replaced and the bytes of the files it
added, against the whole state (a run that changes few keys rewrites only the files that hold them).
``--few N`` adds a third reconcile of only N changes, the other shape of a small run.

    python -m bench.small_run [--rows 100000] [--changes 1000] [--few 10] [--format both]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import tempfile
from pathlib import Path

import sqlalchemy as sa

from bench.common import report, timed
from cdc_backfill.capture.postgres import PostgresCapture
from cdc_backfill.capture.typed import TypedPostgresCapture
from cdc_backfill.pg.embedded import EmbeddedPostgres
from cdc_backfill.reconcile.run_size import first_compiler_only, first_compiler_only_to_ingest
from cdc_backfill.runtime import apply_defaults
from cdc_backfill.signals.model import Signal
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.snapshot.engine import SnapshotEngine
from cdc_backfill.spark.submit import ingest_command, reconcile_command, submit_environ

MASTER = "local[2]"
TABLES = ("public.customers", "public.orders")
TRIVIAL_JOB = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.appName("trivial").getOrCreate()
print(spark.read.parquet(sys.argv[1]).count())
spark.stop()
"""


def _load(url: str, rows: int) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "CREATE TABLE customers (id bigint PRIMARY KEY, name text, email text, balance numeric(12,2),"
            " updated_at timestamptz)"
        )
        conn.exec_driver_sql(
            "CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint, amount numeric(12,2),"
            " status text, placed_at timestamp)"
        )
        conn.exec_driver_sql(
            f"INSERT INTO customers SELECT i, 'customer ' || i, 'c' || i || '@example.org', i %% 10000 / 100.0,"
            f" now() FROM generate_series(1, {rows}) i"
        )
        conn.exec_driver_sql(
            f"INSERT INTO orders SELECT i, i %% 5000, i %% 700 / 10.0, 'new', now()::timestamp"
            f" FROM generate_series(1, {rows}) i"
        )
    engine.dispose()


def _change(url: str, rows: int, n: int, seed: int) -> None:
    rng = random.Random(seed)
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for i in range(n):
            k = rng.randint(1, rows)
            kind = rng.random()
            if kind < 0.6:
                conn.exec_driver_sql(f"UPDATE customers SET balance = balance + 1 WHERE id = {k}")
            elif kind < 0.8:
                conn.exec_driver_sql(f"UPDATE orders SET status = 'paid' WHERE id = {k}")
            elif kind < 0.9:
                conn.exec_driver_sql(f"DELETE FROM orders WHERE id = {k}")
            else:
                conn.exec_driver_sql(
                    f"INSERT INTO orders VALUES ({rows + seed * n + i + 1}, 1, 1, 'new', now())"
                )
    engine.dispose()


def _written(state: Path) -> str:
    """What the last reconcile wrote into each table of ``state``: files replaced, bytes added."""
    from cdc_backfill.state.table import current_version

    parts = []
    for coll in TABLES:
        now = current_version(state, coll)
        before = current_version(state, coll, version=now.version - 1) if now and now.version else None
        if now is None or before is None:
            continue
        added = [f for f in now.files if f not in set(before.files)]
        size = sum(Path(f).stat().st_size for f in now.files)
        new = sum(Path(f).stat().st_size for f in added)
        replaced = len(set(before.files) - set(now.files))
        parts.append(
            f"{coll}: {replaced}/{len(before.files)} files rewritten, {new / 1e6:.1f} of {size / 1e6:.1f} MB"
        )
    return "; ".join(parts)


def _submit(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, env=submit_environ(MASTER), timeout=1800)
    if done.returncode != 0:
        raise SystemExit(
            f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )


def _reconcile(work: Path, f: str, apart: bool = False) -> None:
    """The reconcile as the Airflow task runs it: one job, which ingests a JSON landing's new files
    first; ``apart``: ``ingest`` as a job of its own before the reconcile, as typed by hand."""
    landing, state = work / f, work / f"state-{f}"
    # the product's choices of the driver's compiler (reconcile.run_size), as the task and the CLI make them
    if f == "json" and apart:
        _submit(
            ingest_command(str(landing), master=MASTER, small=first_compiler_only_to_ingest(landing, None))
        )
    ingest = f == "json" and not apart
    small = first_compiler_only(landing, state, TABLES, ingest=ingest)
    _submit(reconcile_command(str(landing), str(state), master=MASTER, ingest=ingest, small=small))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000, help="rows per table (two tables)")
    ap.add_argument("--changes", type=int, default=1000)
    ap.add_argument("--few", type=int, default=10, help="changes of a third, smaller run (0: none)")
    ap.add_argument("--format", choices=("log", "json", "both"), default="both")
    args = ap.parse_args()
    apply_defaults()  # as every entry point: Spark's home, this Python for its workers, spark-submit on PATH
    formats = ("log", "json") if args.format == "both" else (args.format,)
    work = Path(tempfile.mkdtemp(prefix="cdc-bench-small-"))
    out_rows = []
    with EmbeddedPostgres(settings={"fsync": "off"}) as pg:
        _load(pg.url, args.rows)
        store = SignalStore(pg.url)
        store.init()
        captures = {
            "log": lambda: TypedPostgresCapture(pg.url, work / "log", slot="bench_log", publication="bench"),
            "json": lambda: PostgresCapture(pg.url, work / "json", slot="bench_json", publication="bench"),
        }
        for f in formats:
            captures[f]().run()  # slot and publication: every change from here on is captured
        store.send(Signal("bench-small", "execute-snapshot", TABLES, "incremental", chunk_size=8192))
        SnapshotEngine(pg.url, work / "snapshots", readers=2).run()
        for f in formats:
            # both landings get the same READ chunks
            shutil.copytree(work / "snapshots" / "snapshots", work / f / "snapshots")
        _change(pg.url, args.rows, args.changes, seed=1)
        for f in formats:
            captures[f]().run()
            _reconcile(work, f)
        _change(pg.url, args.rows, args.changes, seed=2)
        for f in formats:
            captures[f]().run()
        parquet = next((work / "snapshots" / "snapshots").rglob("*.parquet"))
        trivial_py = work / "trivial.py"
        trivial_py.write_text(TRIVIAL_JOB)
        trivial = ["spark-submit", "--master", MASTER, str(trivial_py), str(parquet)]
        t_trivial, _ = timed(lambda: _submit(trivial))
        for f in formats:
            state = work / f"state-{f}"
            seconds, _ = timed(lambda: _reconcile(work, f))  # noqa: B023 - called at once
            doc = json.loads(sorted((state / "_runs").glob("*.json"))[-1].read_text())
            inside = doc["seconds"]
            rows_now = sum(c["rows"] for c in doc["collections"].values())
            if rows_now < 2 * args.rows * 0.9:
                raise SystemExit(
                    f"{f}: the state has {rows_now} rows, not about {2 * args.rows}: the bench is wrong"
                )
            out_rows.append({
                "measure": f"second reconcile, {f} landing{' (ingest in the job)' if f == 'json' else ''}, {args.changes:,} changes",
                "items": args.changes, "seconds": seconds, "rate": args.changes / seconds,
                "reference": f"{seconds / t_trivial:.1f}x the trivial spark-submit; {inside} s inside the job; "
                             f"{_written(state)}",
            })  # fmt: skip
        if args.few:
            _change(pg.url, args.rows, args.few, seed=3)
            for f in formats:
                captures[f]().run()
                state = work / f"state-{f}"
                seconds, _ = timed(lambda: _reconcile(work, f, apart=True))  # noqa: B023 - called at once
                apart = " (ingest as a job of its own first)" if f == "json" else ""
                out_rows.append({
                    "measure": f"third reconcile, {f} landing{apart}, {args.few:,} changes",
                    "items": args.few, "seconds": seconds, "rate": args.few / seconds,
                    "reference": f"{seconds / t_trivial:.1f}x the trivial spark-submit; {_written(state)}",
                })  # fmt: skip
        t_trivial2, _ = timed(lambda: _submit(trivial))
    out_rows.append({"measure": "  reference: trivial spark-submit (read 1 Parquet, count)", "items": 1,
                     "seconds": t_trivial, "rate": 1 / t_trivial,
                     "reference": f"again after: {t_trivial2:.1f} s"})  # fmt: skip
    report("small_run", out_rows, {"rows_per_table": args.rows, "changes": args.changes, "master": MASTER})
    print(f"(landing zones and states kept in {work})")


if __name__ == "__main__":
    main()
