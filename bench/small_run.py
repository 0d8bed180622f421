"""A small incremental reconcile next to a trivial spark-submit, measured in the same run.

The demo's shape: two tables of ``--rows`` rows each (100k by default) in a throwaway PostgreSQL,
captured from the start, snapshotted by the engine, a first reconcile; then ``--changes`` changes
(updates, inserts, deletes over both tables), drained, and the second reconcile is timed: the real job
through ``spark-submit``, as the Airflow task runs it. The reference: a trivial ``spark-submit``
(session start, read one Parquet file, count).

Beside each time, what the run wrote: the state's files it replaced and the bytes of the files it
added, against the whole state (a run that changes few keys rewrites only the files that hold them).
``--few N`` adds a third reconcile of only N changes, the other shape of a small run.

    python -m bench.small_run [--rows 100000] [--changes 1000] [--few 10]
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
from cdc_backfill.capture.postgres.loop import PostgresCapture
from cdc_backfill.pg.embedded import EmbeddedPostgres
from cdc_backfill.reconcile.run_size import first_compiler_only
from cdc_backfill.runtime import apply_defaults
from cdc_backfill.signals.model import Signal
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE
from cdc_backfill.snapshot.engine import SnapshotEngine
from cdc_backfill.spark.submit import reconcile_command, submit_environ

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


def _reconcile(work: Path) -> None:
    """The reconcile as the Airflow task runs it."""
    landing, state = work / "log", work / "state"
    # the product's choice of the driver's compiler (reconcile.run_size), as the task and the CLI make it
    small = first_compiler_only(landing, state, TABLES, DEFAULT_SIGNAL_TABLE, ingest=False)
    _submit(reconcile_command(str(landing), str(state), master=MASTER, small=small))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000, help="rows per table (two tables)")
    ap.add_argument("--changes", type=int, default=1000)
    ap.add_argument("--few", type=int, default=10, help="changes of a third, smaller run (0: none)")
    args = ap.parse_args()
    apply_defaults()  # as every entry point: Spark's home, this Python for its workers, spark-submit on PATH
    work = Path(tempfile.mkdtemp(prefix="cdc-bench-small-"))
    out_rows = []
    with EmbeddedPostgres(settings={"fsync": "off"}) as pg:
        _load(pg.url, args.rows)
        store = SignalStore(pg.url)
        store.init()

        def capture() -> None:
            PostgresCapture(pg.url, work / "log", slot="bench_log", publication="bench").run()

        capture()  # slot and publication: every change from here on is captured
        store.send(Signal("bench-small", "execute-snapshot", TABLES, "incremental", chunk_size=8192))
        SnapshotEngine(pg.url, work / "snapshots", readers=2).run()
        shutil.copytree(work / "snapshots" / "snapshots", work / "log" / "snapshots")
        _change(pg.url, args.rows, args.changes, seed=1)
        capture()
        _reconcile(work)
        _change(pg.url, args.rows, args.changes, seed=2)
        capture()
        parquet = next((work / "snapshots" / "snapshots").rglob("*.parquet"))
        trivial_py = work / "trivial.py"
        trivial_py.write_text(TRIVIAL_JOB)
        trivial = ["spark-submit", "--master", MASTER, str(trivial_py), str(parquet)]
        t_trivial, _ = timed(lambda: _submit(trivial))
        state = work / "state"
        seconds, _ = timed(lambda: _reconcile(work))
        doc = json.loads(sorted((state / "_runs").glob("*.json"))[-1].read_text())
        inside = doc["seconds"]
        rows_now = sum(c["rows"] for c in doc["collections"].values())
        if rows_now < 2 * args.rows * 0.9:
            raise SystemExit(f"the state has {rows_now} rows, not about {2 * args.rows}: the bench is wrong")
        out_rows.append({
            "measure": f"second reconcile, {args.changes:,} changes",
            "items": args.changes, "seconds": seconds, "rate": args.changes / seconds,
            "reference": f"{seconds / t_trivial:.1f}x the trivial spark-submit; {inside} s inside the job; "
                         f"{_written(state)}",
            "reference_name": "a trivial spark-submit", "reference_seconds": t_trivial,
        })  # fmt: skip
        if args.few:
            _change(pg.url, args.rows, args.few, seed=3)
            capture()
            seconds, _ = timed(lambda: _reconcile(work))
            out_rows.append({
                "measure": f"third reconcile, {args.few:,} changes",
                "items": args.few, "seconds": seconds, "rate": args.few / seconds,
                "reference": f"{seconds / t_trivial:.1f}x the trivial spark-submit; {_written(state)}",
                "reference_name": "a trivial spark-submit", "reference_seconds": t_trivial,
            })  # fmt: skip
        t_trivial2, _ = timed(lambda: _submit(trivial))
    out_rows.append({"measure": "  reference: trivial spark-submit (read 1 Parquet, count)", "items": 1,
                     "seconds": t_trivial, "rate": 1 / t_trivial,
                     "reference": f"again after: {t_trivial2:.1f} s"})  # fmt: skip
    report("small_run", out_rows, {"rows_per_table": args.rows, "changes": args.changes, "master": MASTER})
    print(f"(landing zones and states kept in {work})")


if __name__ == "__main__":
    main()
