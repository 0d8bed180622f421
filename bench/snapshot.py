"""Snapshot throughput and memory: rows/s of the engine with 1 and 2 readers while a writer keeps
updating the table, next to PostgreSQL's own ``COPY (SELECT ...) TO STDOUT`` of the same table in the
same run; peak memory (RSS) of the engine process for each size. Each run is timed twice: as a whole
process (Python's start, imports and planning included), and as its reading, the rate ``snapshot
status`` reports (from the first range's start to the last chunk's progress record). The references
and the engine's runs are taken in turn for ``--rounds`` rounds; each figure is the rounds' median.

    python -m bench.snapshot --rows 1000000 [--rows 10000000] [--chunk-compression zstd]
"""

from __future__ import annotations

import argparse
import io
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg2
import sqlalchemy as sa

from bench.common import report, timed
from cdc_backfill.pg.conninfo import libpq_dsn
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


def run_engine(url: str, landing: Path, readers: int, compression: str) -> tuple[float, int]:
    """(seconds, peak RSS in bytes) of ``snapshot run --once`` as its own process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "snapshot", "run", "--source", url, "--landing", str(landing),
         "--once", "--readers", str(readers), "--chunk-compression", compression],
        check=True, capture_output=True, env={**os.environ, "CDC_BACKFILL_LOG_LEVEL": "WARNING"},
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) * 1024


CASES = ((1, False), (2, False), (1, True), (2, True))  # (readers, a writer running)


def copy_references(url: str, n: int) -> dict[str, float]:
    """Seconds of each reference ``COPY``: CSV and binary, without and with the writer."""
    refs = {"csv": copy_reference(url), "binary": copy_reference(url, "binary")}
    writer = Writer(url, n)
    writer.start()
    try:
        refs["csv busy"], refs["binary busy"] = copy_reference(url), copy_reference(url, "binary")
    finally:
        writer.stop.set()
        writer.join()
    return refs


def engine_round(
    url: str, store: SignalStore, n: int, tag: str, args: argparse.Namespace
) -> dict[tuple, dict]:
    """One run of the engine per case: whole-process seconds, its reading, peak RSS, writer updates, bytes."""
    out = {}
    for readers, with_writer in CASES:
        landing = Path(tempfile.mkdtemp(prefix="cdc-bench-snap-"))
        signal_id = f"bench-{n}-{tag}-{readers}-{int(with_writer)}"
        store.send(Signal(signal_id, "execute-snapshot", ("public.items",), "incremental",
                          chunk_size=args.chunk_size))  # fmt: skip
        writer = Writer(url, n)
        if with_writer:
            writer.start()
        try:
            seconds, peak = run_engine(url, landing, readers, args.chunk_compression)
        finally:
            writer.stop.set()
            if with_writer:
                writer.join()
        size = sum(f.stat().st_size for f in landing.rglob("*.parquet"))
        shutil.rmtree(landing, ignore_errors=True)
        [status] = summarize(read_progress(store.sa_engine, store.schema, signal_id))
        out[(readers, with_writer)] = {"seconds": seconds, "reading": status.rows / status.rate, "peak": peak,
                                       "ops": writer.ops, "bytes": size, "rows": status.rows}  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, action="append", help="table sizes (default 1000000)")
    ap.add_argument("--chunk-size", type=int, help="rows per chunk (default: none, the engine sizes them)")
    ap.add_argument(
        "--chunk-compression", default="auto", help="the engine's (default auto: none on a local landing)"
    )
    ap.add_argument(
        "--rounds", type=int, default=3, help="rounds of every measure; medians reported (default 3)"
    )
    args = ap.parse_args()
    rows_out: list[dict] = []
    meta = {"chunk_size": args.chunk_size or "engine's own (grows from 4096)", "rounds": args.rounds,
            "chunk_compression": args.chunk_compression}  # fmt: skip
    for n in args.rows or [1_000_000]:
        with EmbeddedPostgres(settings={"fsync": "off", "shared_buffers": "512MB"}) as pg:
            engine = sa.create_engine(pg.url)
            t_load, _ = timed(lambda: load_items(engine, n))  # noqa: B023 - called at once
            engine.dispose()
            store = SignalStore(pg.url)
            store.init()
            # the references and the engine's runs taken in turn, round after round, so that a slow
            # minute of the machine falls on both
            refs_rounds, runs = [], []
            for r in range(args.rounds):
                refs_rounds.append(copy_references(pg.url, n))
                runs.append(engine_round(pg.url, store, n, str(r), args))
            refs = {k: statistics.median(rd[k] for rd in refs_rounds) for k in refs_rounds[0]}
            for case in CASES:
                readers, with_writer = case
                got = [rd[case] for rd in runs]
                seconds = statistics.median(g["seconds"] for g in got)
                reading = statistics.median(g["reading"] for g in got)
                ref = refs["csv busy" if with_writer else "csv"]
                ref_binary = refs["binary busy" if with_writer else "binary"]
                by_round = ", ".join(
                    f"{rd['csv busy' if with_writer else 'csv'] / g['reading']:.2f}"
                    for rd, g in zip(refs_rounds, got, strict=True)
                )
                rows_out.append({
                    "measure": f"snapshot {n:,} rows, {readers} reader(s), " + ("writer running" if with_writer else "no writer"),
                    "items": n, "seconds": seconds, "rate": n / seconds,
                    "reference": f"{ref / seconds:.2f} of COPY ({'with' if with_writer else 'no'} writer); "
                                 f"peak RSS {max(g['peak'] for g in got) / 2**20:.0f} MiB; "
                                 f"{statistics.median(g['ops'] for g in got):,.0f} writer updates; "
                                 f"{statistics.median(g['bytes'] for g in got) / 1e6:.0f} MB Parquet",
                    "reference_name": "COPY", "reference_seconds": ref,
                })  # fmt: skip
                rows_out.append({"measure": "    its reading (snapshot status)", "items": got[0]["rows"], "seconds": reading,
                                 "rate": got[0]["rows"] / reading,
                                 "reference": f"{ref / reading:.2f} of COPY ({by_round} round by round); "
                                              f"{ref_binary / reading:.2f} of a binary COPY"})  # fmt: skip
            for label, key in (("COPY (SELECT ... ORDER BY id), " + f"{n:,} rows", "csv"),
                               ("the same COPY, writer running", "csv busy"),
                               ("the same COPY (FORMAT binary)", "binary"),
                               ("the same binary COPY, writer running", "binary busy")):  # fmt: skip
                rows_out.append({"measure": f"  reference: {label}", "items": n, "seconds": refs[key],
                                 "rate": n / refs[key]})  # fmt: skip
            meta[f"load_seconds_{n}"] = round(t_load, 1)
    report("snapshot", rows_out, meta)
    print(
        f"(medians of {args.rounds} rounds; engine times include process start, planning and every chunk's two"
        f" watermark commits; chunk files compressed: {args.chunk_compression})"
    )


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
