"""Reconcile throughput on Spark local[2], next to two references measured in the same run on the same files.

A synthetic landing zone in a temporary folder: Debezium PostgreSQL JSON lines in the capture's byte
layout (``capture/postgres.py``), written and named by the capture's own ``LandingWriter``; creates,
updates and deletes over about N/10 keys; snapshot chunks of the keys that existed before the stream,
each read inside a watermark window whose open/close rows are in the stream (``public.cdc_signal``),
landed as Parquet with the snapshot engine's schema and metadata.

Measured, each on the same files:

(a) the full reconcile: the job itself (``cdc_backfill.spark.job.reconcile_landing``, what ``spark_jobs/reconcile.py`` calls): the stream files parsed
    (the capture's lines in the JVM, ``spark.native``), windows found, READs judged, merged, the run
    summary counted, and a new state version written as Parquet with its carry and metadata;
(b) the bare Spark floor: ``spark.read.json`` with a fixed schema, latest event per key with
    ``max_by``, Parquet; nothing else;
(c) DuckDB: ``read_json`` with the same columns, ``arg_max`` per key, Parquet (2 threads, like local[2]);

and parsing alone, the Python path (``landing_events``) next to the JVM fast path, to a no-op sink.
CPU seconds (the JVM and its Python workers, or this process for DuckDB) are printed beside wall time:
on a shared machine they show how much of a wall figure was waiting for a core.

    python -m bench.reconcile --events 1000000 [--skip-python-parse]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import random
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import psutil
import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import report
from cdc_backfill.capture.landing import LandingWriter
from cdc_backfill.capture.postgres import line_tail, row_line, source_prefix
from cdc_backfill.layout import SNAPSHOT_DIR, STREAM_DIR
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.snapshot.shape import TableShape

log = logging.getLogger(__name__)

SCHEMA, TABLE = "public", "customers"
COLLECTION = f"{SCHEMA}.{TABLE}"
SIGNAL = "public.cdc_signal"
COLUMNS = (
    PgColumn("id", "bigint", 20, nullable=False),
    PgColumn("name", "text", 25),
    PgColumn("email", "text", 25),
    PgColumn("balance", "numeric(12,2)", 1700),
    PgColumn("active", "boolean", 16),
    PgColumn("updated_at", "timestamp with time zone", 1184),
)
EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


# ---------------------------------------------------------------- the landing zone


@dataclass
class Landing:
    folder: Path
    events: int = 0  # stream lines, watermarks included
    files: int = 0
    chunks: int = 0
    read_rows: int = 0
    live: set[int] = field(default_factory=set)  # keys alive at the end: the state must hold exactly these


class _Stream:
    """Transactions through the capture's own line builders (``capture.postgres.row_line``) and
    LandingWriter, so the stream is the capture's byte layout by construction."""

    def __init__(self, folder: Path, roll_bytes: int) -> None:
        self.writer = LandingWriter(folder, roll_bytes=roll_bytes, roll_seconds=1e9)
        self.lsn = 0x1_0000_0000
        self.txid = 1000
        self.clock_ms = 1_700_000_000_000
        self.lines = 0

    def transaction(self, changes: list[tuple[str, str, bytes, bytes, bytes]]) -> None:
        """(table, op, key, before, after) JSON parts of each change; one commit for all."""
        first = self.lsn
        commit = first + 64 * len(changes)  # a commit LSN follows every change of its transaction
        self.txid += 1
        self.clock_ms += 1
        prefixes: dict[str, bytes] = {}
        tail = line_tail(self.clock_ms + 40)
        for i, (table, op, key, before, after) in enumerate(changes):
            prefix = prefixes.get(table)
            if prefix is None:
                prefix = prefixes[table] = source_prefix(
                    version="cdc_backfill-bench", name="cdc_backfill", ts_ms=self.clock_ms, db="app",
                    schema=SCHEMA, table=table, txid=self.txid, commit_lsn=commit,
                )  # fmt: skip
            lsn = first + 64 * i
            self.writer.write(row_line(key, before, after, prefix, lsn, op, tail), commit, lsn)
        self.lines += len(changes)
        self.lsn = commit + 64
        self.writer.commit_done(commit + 32)
        if self.writer.due:
            self.writer.roll()

    def watermark(self, row_id: str, kind: str) -> None:
        key = orjson.dumps({"id": row_id})
        data = json.dumps({"data-collection": COLLECTION, "signal": "bench"})
        after = orjson.dumps({"id": row_id, "type": kind, "data": data})
        self.transaction([("cdc_signal", "c", key, b"null", after)])


def _row_json(k: int, balance_cents: int, active: bool, micros: int) -> bytes:
    ts = (EPOCH + dt.timedelta(microseconds=micros)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return (
        f'{{"id":{k},"name":"customer {k}","email":"c{k}@example.org","balance":"{balance_cents // 100}.'
        f'{balance_cents % 100:02d}","active":{"true" if active else "false"},"updated_at":"{ts}"}}'
    ).encode()


def make_landing(folder: Path, n: int, chunk_size: int = 5000, roll_mb: int = 48, seed: int = 1) -> Landing:
    """About ``n`` stream events over ``n // 10`` keys, and snapshot chunks of the keys present at the start."""
    rng = random.Random(seed)
    keys = max(20, n // 10)
    preexisting = keys // 2
    # key -> (balance in cents, active, updated_at in µs since EPOCH): the table as the source has it
    table: dict[int, tuple[int, bool, int]] = {
        k: (k * 7 % 100_000, True, k) for k in range(1, preexisting + 1)
    }
    out = Landing(folder)
    stream = _Stream(folder, roll_mb << 20)
    shape = TableShape(COLLECTION, SCHEMA, TABLE, COLUMNS, ("id",), ("id",))
    schema = shape.arrow_schema()
    chunk_dir = folder / SNAPSHOT_DIR / COLLECTION
    chunk_dir.mkdir(parents=True)
    n_chunks = (preexisting + chunk_size - 1) // chunk_size
    opens = {int((c + 1) * n / (n_chunks + 1)): c for c in range(n_chunks)}  # stream index -> chunk
    micros = preexisting

    def change(k: int) -> tuple[str, str, bytes, bytes, bytes]:
        nonlocal micros
        micros += 1
        key = b'{"id":%d}' % k
        if k in table and rng.random() < 0.15:
            del table[k]
            return (TABLE, "d", key, key, b"null")
        op = "u" if k in table else "c"
        row = table[k] = (rng.randrange(10_000_000), rng.random() < 0.8, micros)
        return (TABLE, op, key, key if op == "u" else b"null", _row_json(k, *row))

    def chunk(c: int) -> None:
        lo, hi = c * chunk_size + 1, min(preexisting, (c + 1) * chunk_size)
        chunk_id = f"{c:08x}" + "b" * 24
        stream.watermark(f"{chunk_id}-open", "snapshot-window-open")
        # the chunk's SELECT sees the table as it is now; changes committed before the close make some
        # of its rows stale, and the reconcile must drop exactly those
        ids = [k for k in range(lo, hi + 1) if k in table]
        rows = [table[k] for k in ids]
        for _ in range(rng.randint(1, 3)):
            stream.transaction([change(rng.randint(lo, hi))])
        stream.watermark(f"{chunk_id}-close", "snapshot-window-close")
        n_rows = len(ids)
        data = {
            "id": ids,
            "name": [f"customer {k}" for k in ids],
            "email": [f"c{k}@example.org" for k in ids],
            "balance": [Decimal(b).scaleb(-2) for b, _a, _m in rows],
            "active": [a for _b, a, _m in rows],
            "updated_at": [EPOCH + dt.timedelta(microseconds=m) for _b, _a, m in rows],
            "_cdc_op": ["r"] * n_rows,
            "_cdc_collection": [COLLECTION] * n_rows,
            "_cdc_chunk_id": [chunk_id] * n_rows,
        }
        pq.write_table(
            pa.Table.from_pydict(data, schema=schema), chunk_dir / f"{chunk_id}.parquet", compression="zstd"
        )
        out.chunks += 1
        out.read_rows += n_rows

    while stream.lines < n:
        if stream.lines in opens:
            chunk(opens.pop(stream.lines))
            continue
        size = min(rng.randint(1, 4), n - stream.lines)
        stream.transaction([change(rng.randint(1, keys)) for _ in range(size)])
        for i in [i for i in opens if i < stream.lines]:  # an index skipped inside a transaction
            chunk(opens.pop(i))
    stream.writer.roll()
    out.events = stream.lines
    out.files = stream.writer.files_written
    out.live = set(table)
    return out


def reuse_or_make_landing(folder: Path, n: int, chunk_size: int) -> Landing:
    """``make_landing`` once per folder: what it generated is described in ``bench-landing.json``."""
    described = folder / "bench-landing.json"
    if described.exists():
        doc = json.loads(described.read_text())
        if doc["asked"] == [n, chunk_size]:
            return Landing(
                folder, doc["events"], doc["files"], doc["chunks"], doc["read_rows"], set(doc["live"])
            )
        raise SystemExit(
            f"{folder} holds a landing zone of {doc['asked']} (events, chunk size), not {[n, chunk_size]}"
        )
    if folder.exists() and any(folder.iterdir()):
        raise SystemExit(f"{folder} is not empty and was not made by this benchmark")
    out = make_landing(folder, n, chunk_size=chunk_size)
    described.write_text(
        json.dumps({"asked": [n, chunk_size], "events": out.events, "files": out.files, "chunks": out.chunks,
                    "read_rows": out.read_rows, "live": sorted(out.live)})
    )  # fmt: skip
    return out


# ---------------------------------------------------------------- measuring


class CpuClock:
    """CPU seconds of a process and its children (the JVM and its Python workers)."""

    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)

    def read(self) -> float:
        total = 0.0
        for p in [self.proc, *self.proc.children(recursive=True)]:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total


def measure(clock: CpuClock, fn: Any) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds, result)."""
    c0, t0 = clock.read(), time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, clock.read() - c0, out


def spark_floor(spark: Any, stream: str, out: Path) -> None:
    from pyspark.sql import functions as F

    schema = (
        "key struct<id:string>, value struct<op:string, source:struct<table:string, commit_lsn:decimal(20,0), "
        "lsn:decimal(20,0)>, after:struct<id:bigint, name:string, email:string, balance:decimal(12,2), "
        "active:boolean, updated_at:timestamp>>"
    )
    ev = spark.read.schema(schema).json(stream).where(F.col("value.source.table") == TABLE)
    latest = ev.groupBy(F.col("key.id").cast("bigint").alias("id")).agg(
        F.max_by(F.struct(F.col("value.op").alias("op"), F.col("value.after").alias("after")),
                 F.struct("value.source.commit_lsn", "value.source.lsn")).alias("w")
    )  # fmt: skip
    latest.where(F.col("w.op") != "d").select("w.after.*").write.mode("overwrite").parquet(str(out))


def duckdb_floor(stream: Path, out: Path, threads: int) -> None:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    columns = (
        "{'key': 'STRUCT(id VARCHAR)', 'value': 'STRUCT(op VARCHAR, source STRUCT(\"table\" VARCHAR, "
        "commit_lsn UBIGINT, lsn UBIGINT), after STRUCT(id VARCHAR, name VARCHAR, email VARCHAR, "
        "balance DECIMAL(12,2), active BOOLEAN, updated_at TIMESTAMPTZ))'}"
    )
    con.execute(
        f"""
        COPY (
            SELECT w.after.id::BIGINT AS id, w.after.name AS name, w.after.email AS email,
                   w.after.balance AS balance, w.after.active AS active, w.after.updated_at AS updated_at
            FROM (
                SELECT arg_max(struct_pack(op := value.op, after := value.after),
                               struct_pack(c := value.source.commit_lsn, l := value.source.lsn)) AS w
                FROM read_json('{stream}/*.jsonl', format = 'newline_delimited', columns = {columns})
                WHERE value.source."table" = '{TABLE}'
                GROUP BY key.id
            ) WHERE w.op <> 'd'
        ) TO '{out}' (FORMAT parquet)
        """
    )
    con.close()


def full_reconcile(spark: Any, landing: Path, state: Path) -> dict[str, Any]:
    """The reconcile job's own run, from an empty state: what ``cdc-backfill reconcile`` does."""
    from cdc_backfill.spark.job import reconcile_landing

    return reconcile_landing(spark, landing, state)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--chunk-size", type=int, default=5000)
    ap.add_argument(
        "--driver-memory",
        default="2g",
        help="the local session's heap (10M events run in 2g, spilling; 10g is faster)",
    )
    ap.add_argument("--skip-python-parse", action="store_true", help="leave out the slow Python-path parse")
    ap.add_argument("--keep", action="store_true", help="keep the landing zone (printed) for a look")
    ap.add_argument(
        "--landing",
        type=Path,
        help="a landing zone to reuse (generated there first if empty, and kept): generating 10M events "
        "takes minutes",
    )
    args = ap.parse_args()
    threads = (
        int(args.master[len("local[") : -1]) if args.master.startswith("local[") else os.cpu_count() or 2
    )

    work = Path(tempfile.mkdtemp(prefix="cdc-bench-reconcile-"))
    landing_dir = args.landing.resolve() if args.landing else work / "landing"
    stream = landing_dir / STREAM_DIR
    try:
        t_gen0 = time.perf_counter()
        landing = reuse_or_make_landing(landing_dir, args.events, args.chunk_size)
        t_gen = time.perf_counter() - t_gen0
        n = landing.events
        size_mb = sum(f.stat().st_size for f in stream.glob("*.jsonl")) / 1e6
        print(
            f"generated {n:,} events ({size_mb:.0f} MB in {landing.files} files), {landing.chunks} chunks of "
            f"{landing.read_rows:,} READ rows, {len(landing.live):,} live keys, in {t_gen:.0f}s",
            flush=True,
        )

        from pyspark.sql import functions as F

        from cdc_backfill.spark.landing import landing_events
        from cdc_backfill.spark.lines import read_landing_lines
        from cdc_backfill.spark.native import native_landing_events, native_rows
        from cdc_backfill.spark.session import build_session

        load_before = os.getloadavg()
        t0 = time.perf_counter()
        spark = build_session(
            "bench_reconcile", master=args.master, conf={"spark.driver.memory": args.driver_memory}
        )
        t_start = time.perf_counter() - t0
        jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]
        clock = CpuClock(jvm_pid)

        def noop(df: Any) -> None:
            df.write.format("noop").mode("overwrite").save()

        # Warm-up on one file so that JIT, the first Python workers and file caches are billed to nobody.
        first = sorted(stream.glob("*.jsonl"))[0]
        noop(native_landing_events(spark, str(first)))
        spark_floor(spark, str(first), work / "warm")
        native_share = (
            native_rows(read_landing_lines(spark, str(stream)))
            .agg(F.avg(F.col("_cdc_native").cast("double")))
            .first()[0]
        )

        results: dict[str, tuple[float, float]] = {}
        t, c, summary = measure(clock, lambda: full_reconcile(spark, landing_dir, work / "state"))
        results["full"] = (t, c)
        current = work / "state" / COLLECTION / "current"
        state_ids = {r[0] for r in spark.read.parquet(str(current)).select("id").collect()}
        assert state_ids == landing.live, f"state has {len(state_ids)} keys, the source {len(landing.live)}"
        t, c, _ = measure(clock, lambda: spark_floor(spark, str(stream), work / "floor"))
        results["floor"] = (t, c)
        t, c, _ = measure(clock, lambda: noop(native_landing_events(spark, str(stream))))
        results["native_parse"] = (t, c)
        if not args.skip_python_parse:
            t, c, _ = measure(clock, lambda: noop(landing_events(spark, str(stream))))
            results["python_parse"] = (t, c)
        spark.stop()
        me = CpuClock(os.getpid())
        t, c, _ = measure(me, lambda: duckdb_floor(stream, work / "duck.parquet", threads))
        results["duckdb"] = (t, c)
        load_after = os.getloadavg()
    finally:
        if args.landing:
            shutil.rmtree(work, ignore_errors=True)
        elif args.keep:
            print(f"landing zone kept in {landing_dir}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    floor_t = results["floor"][0]

    def row(measure_: str, name: str, reference: str = "") -> dict[str, Any]:
        t, c = results[name]
        return {"measure": measure_, "items": n, "seconds": t, "rate": n / t, "cpu_seconds": round(c, 1),
                "reference": reference}  # fmt: skip

    rows = [
        row(f"(a) full reconcile, Spark {args.master}", "full",
            f"{results['full'][0] / floor_t:.2f}x the floor (goal <= 1.5x)"),
        row("(b) floor: read.json + max_by + Parquet", "floor"),
        row(f"(c) DuckDB ({threads} threads): read_json + arg_max", "duckdb",
            f"{floor_t / results['duckdb'][0]:.1f}x faster than (b)"),
        row("parse only: JVM fast path (spark.native)", "native_parse", f"{native_share:.1%} of lines native"),
    ]  # fmt: skip
    if "python_parse" in results:
        rows.append(
            row("parse only: Python path (landing_events)", "python_parse",
                f"{results['python_parse'][0] / results['native_parse'][0]:.1f}x the fast path")
        )  # fmt: skip
    meta = {
        "events": n,
        "megabytes": round(size_mb, 1),
        "files": landing.files,
        "chunks": landing.chunks,
        "read_rows": landing.read_rows,
        "live_keys": len(landing.live),
        "generate_s": round(t_gen, 1),
        "spark_session_start_s": round(t_start, 1),
        "run_summary": summary,
        "native_share": native_share,
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "cpu_count": os.cpu_count(),
        "driver_memory": args.driver_memory,
    }
    report(f"reconcile_{args.events}", rows, meta)
    print(
        f"({size_mb:.0f} MB of JSON lines in {landing.files} files; Spark session start {t_start:.1f}s, not "
        f"counted; CPU s: "
        + ", ".join(f"{k} {c:.0f}" for k, (_t, c) in results.items())
        + f"; load average {load_before[0]:.1f} -> {load_after[0]:.1f} on {os.cpu_count()} cores)"
    )


if __name__ == "__main__":
    main()
