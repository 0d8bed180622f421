"""Snapshot throughput and memory: rows/s of the engine with 1 and 2 readers while a writer keeps
updating the table, next to PostgreSQL's own ``COPY (SELECT ...) TO STDOUT`` of the same table in the
same run; peak memory (RSS) of the engine process for each size. Each run is timed twice: as a whole
process (Python's start, imports and planning included), and as its reading, the rate ``snapshot
status`` reports (from the first range's start to the last chunk's progress record).

    python -m bench.snapshot --rows 1000000 [--rows 10000000]
"""

from __future__ import annotations

import argparse
import io
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg2
import sqlalchemy as sa

from bench.common import report, timed
from cdc_backfill.pg.connect import libpq_dsn
from cdc_backfill.pg.embedded import EmbeddedPostgres
from cdc_backfill.signals.model import Signal
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.snapshot.queries import read_progress
from cdc_backfill.snapshot.status import summarize


class _Null(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[no-untyped-def,override]
        return len(b)


def copy_reference(url: str, fmt: str = "csv") -> float:
    """Seconds of PostgreSQL's ``COPY`` of the table to a client that keeps nothing, as CSV (the text a
    user's ``\\copy`` gets) or in the binary format the engine reads where it can."""
    conn = psycopg2.connect(libpq_dsn(url))
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        cur.copy_expert(f"COPY (SELECT * FROM items ORDER BY id) TO STDOUT WITH (FORMAT {fmt})", _Null())
    conn.close()
    return time.perf_counter() - t0


class Writer(threading.Thread):
    """Single-row updates, as fast as they go or at ``per_second``."""

    def __init__(self, url: str, rows: int, per_second: float | None = None) -> None:
        super().__init__(daemon=True)
        self.url, self.rows, self.per_second, self.ops = url, rows, per_second, 0
        self.stop = threading.Event()

    def run(self) -> None:
        conn = psycopg2.connect(libpq_dsn(self.url))
        conn.autocommit = True
        rng = random.Random(1)
        t0 = time.perf_counter()
        with conn.cursor() as cur:
            while not self.stop.is_set():
                cur.execute(
                    "UPDATE items SET price = price + 1, flag = NOT flag WHERE id = %s",
                    (rng.randint(1, self.rows),),
                )
                self.ops += 1
                if self.per_second:
                    ahead = self.ops / self.per_second - (time.perf_counter() - t0)
                    if ahead > 0:
                        self.stop.wait(ahead)
        conn.close()


def run_engine(url: str, landing: Path, readers: int) -> tuple[float, int]:
    """(seconds, peak RSS in bytes) of ``snapshot run --once`` as its own process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "snapshot", "run", "--source", url, "--landing", str(landing),
         "--once", "--readers", str(readers)],
        check=True, capture_output=True, env={**os.environ, "CDC_BACKFILL_LOG_LEVEL": "WARNING"},
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) * 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, action="append", help="table sizes (default 1000000)")
    ap.add_argument("--chunk-size", type=int, help="rows per chunk (default: none, the engine sizes them)")
    args = ap.parse_args()
    rows_out, meta = [], {"chunk_size": args.chunk_size or "engine's own (grows from 4096)"}
    for n in args.rows or [1_000_000]:
        with EmbeddedPostgres(settings={"fsync": "off", "shared_buffers": "512MB"}) as pg:
            engine = sa.create_engine(pg.url)
            t_load, _ = timed(lambda: load_items(engine, n))  # noqa: B023 - called at once
            engine.dispose()
            store = SignalStore(pg.url)
            store.init()
            t_copy, t_binary = copy_reference(pg.url), copy_reference(pg.url, "binary")
            writer = Writer(pg.url, n)
            writer.start()
            t_copy_busy, t_binary_busy = copy_reference(pg.url), copy_reference(pg.url, "binary")
            writer.stop.set()
            writer.join()
            for readers, with_writer in ((1, False), (2, False), (1, True), (2, True)):
                landing = Path(tempfile.mkdtemp(prefix="cdc-bench-snap-"))
                signal_id = f"bench-{n}-{readers}-{int(with_writer)}"
                store.send(Signal(signal_id, "execute-snapshot", ("public.items",), "incremental",
                                  chunk_size=args.chunk_size))  # fmt: skip
                writer = Writer(pg.url, n)
                if with_writer:
                    writer.start()
                try:
                    seconds, peak = run_engine(pg.url, landing, readers)
                finally:
                    writer.stop.set()
                    if with_writer:
                        writer.join()
                size = sum(f.stat().st_size for f in landing.rglob("*.parquet"))
                shutil.rmtree(landing, ignore_errors=True)
                ref = t_copy_busy if with_writer else t_copy
                ref_binary = t_binary_busy if with_writer else t_binary
                [status] = summarize(read_progress(store.engine, store.schema, signal_id))
                reading = status.rows / status.rate
                rows_out.append({
                    "measure": f"snapshot {n:,} rows, {readers} reader(s), " + ("writer running" if with_writer else "no writer"),
                    "items": n, "seconds": seconds, "rate": n / seconds,
                    "reference": f"{ref / seconds:.2f} of COPY ({'with' if with_writer else 'no'} writer); "
                                 f"peak RSS {peak / 2**20:.0f} MiB; {writer.ops:,} writer updates; {size / 1e6:.0f} MB Parquet",
                })  # fmt: skip
                rows_out.append({"measure": "    its reading (snapshot status)", "items": status.rows, "seconds": reading,
                                 "rate": status.rate, "reference": f"{ref / reading:.2f} of COPY; "
                                                                   f"{ref_binary / reading:.2f} of a binary COPY"})  # fmt: skip
            rows_out.append({"measure": f"  reference: COPY (SELECT ... ORDER BY id), {n:,} rows", "items": n,
                             "seconds": t_copy, "rate": n / t_copy})  # fmt: skip
            rows_out.append({"measure": "  reference: the same COPY, writer running", "items": n,
                             "seconds": t_copy_busy, "rate": n / t_copy_busy})  # fmt: skip
            rows_out.append({"measure": "  reference: the same COPY (FORMAT binary)", "items": n,
                             "seconds": t_binary, "rate": n / t_binary})  # fmt: skip
            rows_out.append({"measure": "  reference: the same binary COPY, writer running", "items": n,
                             "seconds": t_binary_busy, "rate": n / t_binary_busy})  # fmt: skip
            meta[f"load_seconds_{n}"] = round(t_load, 1)
    report("snapshot", rows_out, meta)
    print("(engine times include process start, planning and every chunk's two watermark commits)")


def load_items(engine: sa.Engine, n: int) -> None:
    with engine.begin() as conn:
        conn.execute(sa.text(
            "CREATE TABLE items (id bigint PRIMARY KEY, name text, price numeric(12,2), updated_at timestamptz,"
            " flag bool, payload text)"))  # fmt: skip
        conn.execute(sa.text(
            "INSERT INTO items SELECT i, 'item ' || i, i * 0.01, now() - i * interval '1 second', i % 2 = 0, "
            f"md5(i::text) FROM generate_series(1, {n}) i"))  # fmt: skip
        conn.execute(sa.text("ANALYZE items"))


if __name__ == "__main__":
    main()
