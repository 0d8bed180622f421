"""This project's snapshot engine against Debezium's incremental snapshot, on the same table in the same
run, a writer updating it throughout (250 single-row updates/s): rows/s, the ratio to PostgreSQL's own ``COPY`` of that table
(with the writer running), and the peak memory (RSS) of the process doing the reading.

- the engine: ``cdc-backfill snapshot run --once`` with 1 and 2 readers (chunk 8192, its default here);
- Debezium 3.6.3's PostgreSQL connector, embedded (``cdc-backfill capture debezium --drain
  --until-snapshot``, JVM start included): its defaults (chunk 1024, ``poll.interval.ms`` 500) and a
  tuned setting (chunk 8192, ``poll.interval.ms`` 10), and that setting without the ``{schema, payload}``
  wrapper. Each lands durably through this project's capture (JSON lines, fsync per batch). Its figure is the time from the signal to every
  READ landed; the start of the JVM alone is given as a reference line, and the same connector and
  settings landing nothing (each batch read out of the JVM and committed) as the reference the landing
  is measured against.

    python -m bench.debezium --rows 200000
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import sqlalchemy as sa

from bench.common import report

# an unthrottled writer would measure Debezium's streaming, not its snapshot: it streams every change
from bench.snapshot import Writer, copy_reference, load_items
from cdc_backfill.pg.embedded import EmbeddedPostgres
from cdc_backfill.signals.model import Signal
from cdc_backfill.signals.store import SignalStore

QUIET = {**os.environ, "CDC_BACKFILL_LOG_LEVEL": "WARNING"}


def measured(cmd: list[str]) -> tuple[float, int]:
    """(seconds, peak RSS in bytes) of a command, its memory sampled every 100 ms."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=QUIET)
    ps, peak = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        try:
            peak = max(peak, ps.memory_info().rss)
        except psutil.Error:
            pass
        time.sleep(0.1)
    seconds = time.perf_counter() - t0
    _out, err = proc.communicate()
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[:6])} ... failed ({proc.returncode}): {err.decode()[-800:]}")
    return seconds, peak


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "cdc_backfill.cli", *args]


def drop_slot(url: str, slot: str) -> None:
    with sa.create_engine(url).begin() as conn:
        conn.execute(sa.text("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                             "WHERE slot_name = :s"), {"s": slot})  # fmt: skip


def connector_alone(url: str, store: SignalStore, slot: str, how: list[str], n: int) -> dict:
    """The reference of a Debezium run: the same connector and settings, each batch read out of the JVM
    and committed, nothing landed (``bench.debezium_connector``), from its signal to its last READ."""
    landing = Path(tempfile.mkdtemp(prefix="cdc-bench-dbz-"))
    chunk, poll, *rest = how
    props = [p for p in rest if p != "--property"]
    measured(cli("capture", "debezium", "--source", url, "--landing", str(landing), "--collections",
                 "public.items", "--slot", slot, "--publication", slot, "--drain"))  # fmt: skip
    sid = f"{slot}-signal"
    store.send(Signal(sid, "execute-snapshot", ("public.items",), "incremental"))
    seconds, _ = measured([sys.executable, "-m", "bench.debezium_connector", url, str(landing), slot, chunk, poll,
                           sid, *props])  # fmt: skip
    shutil.rmtree(landing, ignore_errors=True)
    drop_slot(store.url, slot)  # SQLAlchemy's URL, with its driver
    return {"measure": "  reference: the connector alone, landing nothing", "items": n, "seconds": seconds,
            "rate": n / seconds}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--writes", type=float, default=250, help="writer updates per second (default 250)")
    args = ap.parse_args()
    n = args.rows
    rows_out: list[dict] = []
    with EmbeddedPostgres(settings={"wal_level": "logical", "fsync": "off", "shared_buffers": "512MB"}) as pg:
        engine = sa.create_engine(pg.url)
        load_items(engine, n)
        engine.dispose()
        url = "postgresql://" + pg.url.split("://", 1)[1]
        store = SignalStore(pg.url)
        store.init()
        writer = Writer(pg.url, n, args.writes)
        writer.start()
        try:
            t_copy = copy_reference(pg.url)
            runs: list[tuple[str, list[str]]] = []
            for readers in (1, 2):
                runs.append((f"engine, {readers} reader(s)", ["native", str(readers)]))
            runs.append(("Debezium, defaults (chunk 1024, poll 500 ms)", ["debezium", "1024", "500"]))
            runs.append(("Debezium, tuned (chunk 8192, poll 10 ms)", ["debezium", "8192", "10"]))
            # without the {schema, payload} wrapper: a seventh of the bytes; ingest then types the
            # collections from the catalog (`ingest --source`)
            runs.append(("Debezium, tuned, no schema wrapper", ["debezium", "8192", "10", "--property",
                         "converter.schemas.enable=false"]))  # fmt: skip
            for i, (label, how) in enumerate(runs):
                landing = Path(tempfile.mkdtemp(prefix="cdc-bench-dbz-"))
                sid = f"bench-{i}"
                if how[0] == "native":
                    store.send(
                        Signal(sid, "execute-snapshot", ("public.items",), "incremental", chunk_size=8192)
                    )
                    cmd = cli("snapshot", "run", "--source", url, "--landing", str(landing), "--once",
                              "--readers", how[1])  # fmt: skip
                else:
                    dbz = ["capture", "debezium", "--source", url, "--landing", str(landing),
                           "--collections", "public.items", "--slot", f"bench_{i}", "--publication", f"bench_{i}",
                           "--chunk-size", how[1], "--poll-ms", how[2], *how[3:]]  # fmt: skip
                    t_start, _ = measured(cli(*dbz, "--drain"))  # the slot, before the signal
                    rows_out.append({"measure": "  reference: Debezium start + empty drain", "items": 0,
                                     "seconds": t_start, "rate": 0})  # fmt: skip
                    store.send(Signal(sid, "execute-snapshot", ("public.items",), "incremental"))
                    cmd = cli(*dbz, "--drain", "--until-snapshot", sid)
                ops0 = writer.ops
                seconds, peak = measured(cmd)
                size = sum(f.stat().st_size for f in landing.rglob("*") if f.is_file())
                shutil.rmtree(landing, ignore_errors=True)
                drop_slot(pg.url, f"bench_{i}")
                alone = ""
                if how[0] == "debezium":  # the same connector and settings, landing nothing
                    bare = connector_alone(url, store, f"bench_{i}_alone", how[1:], n)
                    rows_out.append(bare)
                    alone = f"; {bare['seconds'] / seconds:.2f} of the connector alone's rate"
                rows_out.append({
                    "measure": label, "items": n, "seconds": seconds, "rate": n / seconds,
                    "reference": f"{t_copy / seconds:.3f} of COPY{alone}; peak RSS {peak / 2**20:.0f} MiB; "
                                 f"{writer.ops - ops0:,} writer updates; {size / 1e6:.0f} MB landed",
                })  # fmt: skip
            t_copy_after = copy_reference(pg.url)
        finally:
            writer.stop.set()
            writer.join()
    rows_out.append({"measure": f"  reference: COPY (SELECT ... ORDER BY id), {n:,} rows, writer running",
                     "items": n, "seconds": t_copy, "rate": n / t_copy,
                     "reference": f"again at the end: {n / t_copy_after:,.0f} rows/s"})  # fmt: skip
    report("debezium", rows_out, {"rows": n, "writer_updates_per_second": args.writes})
    print("(every figure includes its process start; Debezium's includes the JVM's, see the reference line)")


if __name__ == "__main__":
    main()
