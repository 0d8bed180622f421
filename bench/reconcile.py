"""Reconcile throughput on Spark local[2], each path next to its floor measured in the same run on the
same files.

A synthetic source history, landed twice by construction: as the typed event log the capture writes
(``eventlog.writer.LogWriter``, the capture's own writer, fed the text values pgoutput would carry) and
as Debezium PostgreSQL JSON lines in the capture's byte layout (``capture/postgres.py``, through the
capture's ``LandingWriter``); creates, updates and deletes over about N/10 keys; snapshot chunks of the
keys that existed before the stream, each read inside a watermark window whose open/close rows are in
the stream (``public.cdc_signal``), landed as Parquet with the snapshot engine's schema and metadata.

Measured:

(a) capture -> typed log -> reconcile, the median of ``--rounds`` rounds alternating with (b): the job
    itself (``cdc_backfill.reconcile.spark.job.reconcile_landing``, what ``spark_jobs/reconcile.py``
    calls) over the log: windows found, READs judged, merged, the run
    summary counted, a new state version written as Parquet with its carry and metadata;
(b) its floor on the same typed files: ``spark.read.parquet``, latest event per key with ``max_by`` on
    the position, Parquet; nothing else;
(c) Debezium JSON files -> ``ingest`` -> reconcile: the JSON files ingested into a fresh landing zone
    (``spark.ingest.ingest_landing``, what ``cdc-backfill ingest`` runs), then the same reconcile;
(d) its floor, the old one: ``spark.read.json`` with a fixed schema, ``max_by``, Parquet;
(e) DuckDB (2 threads, like local[2]) on the same typed files, and on the same JSON files: the
    single-machine reference.

CPU seconds (the JVM and its Python workers, or this process for DuckDB) are printed beside wall time:
on a shared machine they show how much of a wall figure was waiting for a core.

    python -m bench.reconcile --events 1000000
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import random
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import psutil
import pyarrow as pa

from bench.common import report
from bench.debezium_lines import StreamFiles, line_tail, row_line, source_prefix
from cdc_backfill.landing.event_log import describe
from cdc_backfill.landing.layout import LOG_DIR, SNAPSHOT_DIR, STREAM_DIR
from cdc_backfill.landing.writer import LogWriter
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.snapshot.chunks import land_chunk
from cdc_backfill.snapshot.compression import chunk_compression_for
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


# ---------------------------------------------------------------- the landing zones

JSON_DIR, LOG_DIR_NAME = "json", "log"  # <folder>/json: the JSON landing; <folder>/log: the typed one
SIGNAL_COLUMNS = (PgColumn("id", "text", 25), PgColumn("type", "text", 25), PgColumn("data", "text", 25))
# (table, op, key JSON, before JSON, after JSON, the row's text values for the log)
Change = tuple[str, str, bytes, bytes, bytes, list[bytes | None]]


@dataclass
class Landing:
    folder: Path  # holds json/ and log/
    events: int = 0  # stream events, watermarks included
    files: int = 0  # JSON stream files
    chunks: int = 0
    read_rows: int = 0
    live: set[int] = field(default_factory=set)  # keys alive at the end: the state must hold exactly these

    @property
    def json(self) -> Path:
        return self.folder / JSON_DIR

    @property
    def log(self) -> Path:
        return self.folder / LOG_DIR_NAME


class _Stream:
    """Transactions landed twice: as a sink's Debezium JSON lines (``bench.debezium_lines``) and as the
    typed log through the capture's LogWriter, at the same positions (commit LSN, LSN)."""

    def __init__(self, landing: Landing, roll_bytes: int) -> None:
        self.writer = StreamFiles(landing.json, roll_bytes)
        self.log = LogWriter(landing.log, "bench", roll_events=500_000, roll_seconds=1e9)
        self.versions = {
            TABLE: describe(landing.log, COLLECTION, COLUMNS, ["id"]),
            "cdc_signal": describe(landing.log, SIGNAL, SIGNAL_COLUMNS, ["id"]),
        }
        self.lsn = 0x1_0000_0000
        self.txid = 1000
        self.clock_ms = 1_700_000_000_000
        self.lines = 0

    def transaction(self, changes: list[Change]) -> None:
        """One commit for all the changes."""
        first = self.lsn
        commit = first + 64 * len(changes)  # a commit LSN follows every change of its transaction
        self.txid += 1
        self.clock_ms += 1
        prefixes: dict[str, bytes] = {}
        tail = line_tail(self.clock_ms + 40)
        for i, (table, op, key, before, after, values) in enumerate(changes):
            prefix = prefixes.get(table)
            if prefix is None:
                prefix = prefixes[table] = source_prefix(
                    ts_ms=self.clock_ms,
                    db="app",
                    schema=SCHEMA,
                    table=table,
                    txid=self.txid,
                    commit_lsn=commit,
                )
            lsn = first + 64 * i
            self.writer.write(row_line(key, before, after, prefix, lsn, op, tail))
            coll = SIGNAL if table == "cdc_signal" else COLLECTION
            self.log.write(coll, self.versions[table], op, (commit, lsn), values, self.clock_ms)
        self.lines += len(changes)
        self.lsn = commit + 64
        self.log.commit_done(commit + 32)
        if self.writer.due:
            self.writer.roll()
        if self.log.due:
            self.log.roll()

    def watermark(self, row_id: str, kind: str) -> None:
        key = orjson.dumps({"id": row_id})
        data = json.dumps({"data-collection": COLLECTION, "signal": "bench"})
        after = orjson.dumps({"id": row_id, "type": kind, "data": data})
        self.transaction(
            [("cdc_signal", "c", key, b"null", after, [row_id.encode(), kind.encode(), data.encode()])]
        )

    def close(self) -> None:
        self.writer.roll()
        self.log.roll()


def _row(k: int, balance_cents: int, active: bool, micros: int) -> tuple[bytes, list[bytes | None]]:
    """A customer row as Debezium's JSON and as the text values pgoutput sends."""
    at = EPOCH + dt.timedelta(microseconds=micros)
    balance = f"{balance_cents // 100}.{balance_cents % 100:02d}"
    doc = (
        f'{{"id":{k},"name":"customer {k}","email":"c{k}@example.org","balance":"{balance}",'
        f'"active":{"true" if active else "false"},"updated_at":"{at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}"}}'
    ).encode()
    text = [b"%d" % k, b"customer %d" % k, b"c%d@example.org" % k, balance.encode(), b"t" if active else b"f",
            at.strftime("%Y-%m-%d %H:%M:%S.%f+00").encode()]  # fmt: skip
    return doc, text


def make_landing(folder: Path, n: int, chunk_size: int = 5000, roll_mb: int = 48, seed: int = 1) -> Landing:
    """About ``n`` stream events over ``n // 10`` keys, and snapshot chunks of the keys present at the
    start, in both landing zones."""
    rng = random.Random(seed)
    keys = max(20, n // 10)
    preexisting = keys // 2
    # key -> (balance in cents, active, updated_at in µs since EPOCH): the table as the source has it
    table: dict[int, tuple[int, bool, int]] = {
        k: (k * 7 % 100_000, True, k) for k in range(1, preexisting + 1)
    }
    out = Landing(folder)
    stream = _Stream(out, roll_mb << 20)
    shape = TableShape(COLLECTION, SCHEMA, TABLE, COLUMNS, ("id",), ("id",))
    schema = shape.arrow_schema()
    n_chunks = (preexisting + chunk_size - 1) // chunk_size
    opens = {int((c + 1) * n / (n_chunks + 1)): c for c in range(n_chunks)}  # stream index -> chunk
    micros = preexisting

    def change(k: int) -> Change:
        nonlocal micros
        micros += 1
        key = b'{"id":%d}' % k
        if k in table and rng.random() < 0.15:
            del table[k]
            return (TABLE, "d", key, key, b"null", [b"%d" % k, None, None, None, None, None])
        op = "u" if k in table else "c"
        row = table[k] = (rng.randrange(10_000_000), rng.random() < 0.8, micros)
        doc, text = _row(k, *row)
        return (TABLE, op, key, key if op == "u" else b"null", doc, text)

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
        chunk_table = pa.Table.from_pydict(data, schema=schema)
        # as the snapshot engine lands them (on a local folder: uncompressed, the key's statistics only)
        for root in (out.json, out.log):
            land_chunk(root, shape, chunk_id, chunk_table, chunk_compression_for(root))
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
    stream.close()
    out.events = stream.lines
    out.files = stream.writer.files_written
    out.live = set(table)
    return out


def reuse_or_make_landing(folder: Path, n: int, chunk_size: int) -> Landing:
    """``make_landing`` once per folder: what it generated is described in ``bench-landing.json``."""
    described = folder / "bench-landing.json"
    asked = [n, chunk_size, "json+log", "chunks as landed"]  # one generated otherwise is refused
    if described.exists():
        doc = json.loads(described.read_text())
        if doc["asked"] == asked:
            return Landing(
                folder, doc["events"], doc["files"], doc["chunks"], doc["read_rows"], set(doc["live"])
            )
        raise SystemExit(f"{folder} holds a landing zone of {doc['asked']}, not {asked}: give another folder")
    if folder.exists() and any(folder.iterdir()):
        raise SystemExit(f"{folder} is not empty and was not made by this benchmark")
    out = make_landing(folder, n, chunk_size=chunk_size)
    described.write_text(
        json.dumps({"asked": asked, "events": out.events, "files": out.files, "chunks": out.chunks,
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


def json_floor(spark: Any, stream: str, out: Path) -> None:
    """(d) the old floor: JSON read with a fixed schema, the latest event per key, Parquet."""
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


def log_floor(spark: Any, files: str, out: Path) -> None:
    """(b) the floor on the typed log: its Parquet files, the latest event per key by position, Parquet."""
    from pyspark.sql import functions as F

    names = [c.name for c in COLUMNS]
    ev = spark.read.parquet(files)
    latest = ev.groupBy("id").agg(
        F.max_by(F.struct(F.col("_cdc_op").alias("op"), *names), F.col("_cdc_position")).alias("w")
    )
    latest.where(F.col("w.op") != "d").select(*[f"w.{n}" for n in names]).write.mode("overwrite").parquet(
        str(out)
    )


def _duckdb(threads: int) -> Any:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    return con


def duckdb_json_floor(stream: Path, out: Path, threads: int) -> None:
    con = _duckdb(threads)
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


def duckdb_log_floor(files: str, out: Path, threads: int) -> None:
    con = _duckdb(threads)
    picked = ", ".join(f"w.{c.name} AS {c.name}" for c in COLUMNS)
    con.execute(
        f"""
        COPY (
            SELECT {picked} FROM (
                SELECT arg_max(struct_pack(op := _cdc_op, {", ".join(f"{c.name} := {c.name}" for c in COLUMNS)}),
                               _cdc_position) AS w
                FROM read_parquet('{files}')
                GROUP BY id
            ) WHERE w.op <> 'd'
        ) TO '{out}' (FORMAT parquet)
        """
    )
    con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--chunk-size", type=int, default=5000)
    ap.add_argument(
        "--driver-memory",
        default="2g",
        help="the local session's heap (2g, the job's own default)",
    )
    ap.add_argument(
        "--rounds", type=int, default=3, help="alternating rounds of (a) and its floor (b): their medians"
    )
    ap.add_argument(
        "--warm-rounds", type=int, default=1,
        help="rounds of (a) and (b) over the whole landing before the counted ones, not counted (default 1)",
    )  # fmt: skip
    ap.add_argument("--keep", action="store_true", help="keep the landing zones (printed) for a look")
    ap.add_argument(
        "--landing",
        type=Path,
        help="a folder to keep the generated landing zones in and reuse (generated there first if empty): "
        "generating 10M events takes minutes",
    )
    args = ap.parse_args()
    threads = (
        int(args.master[len("local[") : -1]) if args.master.startswith("local[") else os.cpu_count() or 2
    )

    work = Path(tempfile.mkdtemp(prefix="cdc-bench-reconcile-"))
    folder = args.landing.resolve() if args.landing else work / "landing"
    try:
        t_gen0 = time.perf_counter()
        landing = reuse_or_make_landing(folder, args.events, args.chunk_size)
        t_gen = time.perf_counter() - t_gen0
        n = landing.events
        stream = landing.json / STREAM_DIR
        json_mb = sum(f.stat().st_size for f in stream.glob("*.jsonl")) / 1e6
        log_files = landing.log / LOG_DIR / COLLECTION / "v0001" / "*.parquet"
        log_mb = sum(f.stat().st_size for f in (landing.log / LOG_DIR).rglob("*.parquet")) / 1e6
        print(
            f"generated {n:,} events ({json_mb:.0f} MB of JSON in {landing.files} files; {log_mb:.0f} MB of "
            f"typed log), {landing.chunks} chunks of {landing.read_rows:,} READ rows, {len(landing.live):,} "
            f"live keys, in {t_gen:.0f}s",
            flush=True,
        )

        from cdc_backfill.ingest.column_sources import ColumnSources
        from cdc_backfill.ingest.spark.job import ingest_landing
        from cdc_backfill.reconcile.spark.job import reconcile_landing
        from cdc_backfill.spark.session import build_session
        from cdc_backfill.state.spark.frames import read_version
        from cdc_backfill.state.table import current_version

        load_before = os.getloadavg()
        t0 = time.perf_counter()
        spark = build_session(
            "bench_reconcile", master=args.master, conf={"spark.driver.memory": args.driver_memory}
        )
        t_start = time.perf_counter() - t0
        jvm_pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[union-attr]
        clock = CpuClock(jvm_pid)

        # Warm-up on one file of each so that JIT, the first Python workers and file caches are billed
        # to nobody.
        json_floor(spark, str(sorted(stream.glob("*.jsonl"))[0]), work / "warm-json")
        log_floor(spark, str(sorted(log_files.parent.glob("*.parquet"))[0]), work / "warm-log")
        # and the job's own first queries (code generation of the reconcile's and the ingest's plans, the
        # ingest's Python workers), on a small landing
        warm = make_landing(work / "warm", 20_000, chunk_size=args.chunk_size)
        reconcile_landing(spark, warm.log, work / "warm-state")
        warm_ingest = work / "warm-ingested"
        shutil.copytree(warm.json / SNAPSHOT_DIR, warm_ingest / SNAPSHOT_DIR)
        ingest_landing(spark, warm_ingest, [warm.json / STREAM_DIR], ColumnSources(warm_ingest, SIGNAL))
        shutil.rmtree(warm_ingest, ignore_errors=True)
        shutil.rmtree(work / "warm", ignore_errors=True)

        def check(state: Path) -> None:
            current = current_version(state, COLLECTION)
            assert current is not None, f"no state of {COLLECTION} in {state}"
            ids = {r[0] for r in read_version(spark, current).select("id").collect()}
            assert ids == landing.live, f"state has {len(ids)} keys, the source {len(landing.live)}"

        results: dict[str, tuple[float, float]] = {}
        # (a) and (b) in alternating rounds, each a fresh state: the median of each. One JVM runs both,
        # so whichever ran first would pay for the JIT compiling what the other then finds compiled.
        rounds: dict[str, list[tuple[float, float]]] = {"log": [], "log_floor": []}
        # a round of each over the whole landing first, not counted: the small warm-up above leaves
        # the hot loops of the larger plan (ours more than the floor's) to be compiled by the JIT inside
        # the measured rounds, where the ratio then falls round after round
        warmed = []
        for _ in range(args.warm_rounds):
            t, _c, _ = measure(clock, lambda: reconcile_landing(spark, landing.log, work / "warm-log-state"))
            shutil.rmtree(work / "warm-log-state", ignore_errors=True)
            t_floor, _c, _ = measure(
                clock, lambda: log_floor(spark, str(log_files.parent), work / "warm-floor")
            )
            shutil.rmtree(work / "warm-floor", ignore_errors=True)
            warmed.append(f"{t:.2f}/{t_floor:.2f} s")
        for i in range(args.rounds):
            state_dir = work / f"state-log-{i}"
            t, c, summary = measure(clock, lambda: reconcile_landing(spark, landing.log, state_dir))  # noqa: B023
            rounds["log"].append((t, c))
            check(state_dir)
            shutil.rmtree(state_dir, ignore_errors=True)
            floor_dir = work / f"floor-log-{i}"
            t, c, _ = measure(clock, lambda: log_floor(spark, str(log_files.parent), floor_dir))  # noqa: B023
            rounds["log_floor"].append((t, c))
            shutil.rmtree(floor_dir, ignore_errors=True)
        for name, timed_rounds in rounds.items():
            results[name] = (
                statistics.median(t for t, _ in timed_rounds),
                statistics.median(c for _, c in timed_rounds),
            )
        # (c): the JSON files ingested into a fresh landing zone holding the same READ chunks
        fresh = work / "ingested"
        shutil.copytree(landing.json / SNAPSHOT_DIR, fresh / SNAPSHOT_DIR)
        t, c, ingested = measure(
            clock, lambda: ingest_landing(spark, fresh, [stream], ColumnSources(fresh, SIGNAL))
        )
        results["ingest"] = (t, c)
        t, c, _ = measure(clock, lambda: reconcile_landing(spark, fresh, work / "state-json"))
        results["ingest_reconcile"] = (t, c)
        results["json"] = (results["ingest"][0] + t, results["ingest"][1] + c)
        check(work / "state-json")
        t, c, _ = measure(clock, lambda: json_floor(spark, str(stream), work / "floor-json"))
        results["json_floor"] = (t, c)
        spark.stop()
        me = CpuClock(os.getpid())
        t, c, _ = measure(me, lambda: duckdb_log_floor(str(log_files), work / "duck-log.parquet", threads))
        results["duckdb_log"] = (t, c)
        t, c, _ = measure(me, lambda: duckdb_json_floor(stream, work / "duck-json.parquet", threads))
        results["duckdb_json"] = (t, c)
        load_after = os.getloadavg()
    finally:
        if args.keep and not args.landing:
            print(f"landing zones kept in {folder}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    labels = {"log_floor": "(b)", "json_floor": "(d)"}

    def row(measure_: str, name: str, floor: str | None = None, reference: str = "") -> dict[str, Any]:
        """A figure's row; with ``floor``, its ratio to that floor leads the reference and names it."""
        t, c = results[name]
        out = {"measure": measure_, "items": n, "seconds": t, "rate": n / t, "cpu_seconds": round(c, 1),
               "reference": reference}  # fmt: skip
        if floor is not None:
            out |= {"reference": f"{t / results[floor][0]:.2f}x {labels[floor]}{reference}",
                    "reference_name": f"its floor {labels[floor]}", "reference_seconds": results[floor][0]}  # fmt: skip
        return out

    rows = [
        row(f"(a) typed log -> reconcile, Spark {args.master}", "log", "log_floor", " (goal <= 1.5x)"),
        row("(b) floor: read.parquet(log) + max_by + Parquet", "log_floor"),
        row("(c) JSON -> ingest -> reconcile", "json", "json_floor", " (goal <= 1.5x)"),
        row("      of which ingest", "ingest", "json_floor"),
        row("      of which reconcile", "ingest_reconcile", "json_floor"),
        row("(d) floor: read.json + max_by + Parquet", "json_floor"),
        row(f"(e) DuckDB ({threads} threads) on the typed log", "duckdb_log",
            reference=f"{results['log_floor'][0] / results['duckdb_log'][0]:.1f}x faster than (b)"),
        row(f"    DuckDB ({threads} threads) on the JSON", "duckdb_json",
            reference=f"{results['json_floor'][0] / results['duckdb_json'][0]:.1f}x faster than (d)"),
    ]  # fmt: skip
    meta = {
        "events": n,
        "json_megabytes": round(json_mb, 1),
        "log_megabytes": round(log_mb, 1),
        "files": landing.files,
        "chunks": landing.chunks,
        "read_rows": landing.read_rows,
        "live_keys": len(landing.live),
        "generate_s": round(t_gen, 1),
        "spark_session_start_s": round(t_start, 1),
        "run_summary": summary,
        "ingest_summary": ingested,
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "cpu_count": os.cpu_count(),
        "driver_memory": args.driver_memory,
        "rounds": args.rounds,
        "warm_rounds": args.warm_rounds,
        "rounds_seconds": {k: [round(t, 2) for t, _ in v] for k, v in rounds.items()},
    }
    report(f"reconcile_{args.events}", rows, meta)
    # each round's pair beside the medians: the two drift apart as the JVM warms, and a ratio of medians
    # can then differ from the rounds' own ratios
    seconds = [(a, b) for (a, _), (b, _) in zip(rounds["log"], rounds["log_floor"], strict=True)]
    pairs = [a / b for a, b in seconds]
    if warmed:
        print(
            f"not counted, a warm-up round of (a) and (b) over the whole landing first: {', '.join(warmed)}"
        )
    print(
        "(a) against (b) round by round: "
        + ", ".join(f"{a:.2f}/{b:.2f} s" for a, b in seconds)
        + f"; their ratios {', '.join(f'{r:.2f}' for r in pairs)}x (median {statistics.median(pairs):.2f}x)"
    )
    print(
        f"({json_mb:.0f} MB of JSON lines in {landing.files} files, {log_mb:.0f} MB of typed log; Spark session "
        f"start {t_start:.1f}s, not counted; CPU s: "
        + ", ".join(f"{k} {c:.0f}" for k, (_t, c) in results.items())
        + f"; load average {load_before[0]:.1f} -> {load_after[0]:.1f} on {os.cpu_count()} cores)"
    )


if __name__ == "__main__":
    main()
