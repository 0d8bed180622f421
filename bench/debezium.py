"""This project's snapshot engine against Debezium's incremental snapshot, on the same table in the same
run, a writer updating it throughout (250 single-row updates/s): rows/s, the ratio to PostgreSQL's own ``COPY`` of that table
(with the writer running), and the peak memory (RSS) of the process doing the reading.

- the engine: ``cdc-backfill snapshot run --once`` with 1 and 2 readers (chunk 8192, its default here);
- Debezium 3.6.3's PostgreSQL connector, embedded (``cdc-backfill capture debezium --drain
  --until-snapshot``, JVM start included): its defaults (chunk 1024, ``poll.interval.ms`` 500) and a
  tuned setting (chunk 8192, ``poll.interval.ms`` 10), and that setting without schemas
  (``converter.schemas.enable=false``). Each lands durably through this project's capture (JSON lines,
  each Connect schema once per file, fsync per batch). Its figure is the time from the signal to every
  READ landed; the start of the JVM alone is given as a reference line, and the same connector and
  settings landing nothing (each batch read out of the JVM and committed: the connector's own JSON
  output, schemas in every record) as the reference the landing is measured against. Where the landing
  keeps schemas, the connector alone without them (its converter writing payloads only) is given too:
  the floor of any landing that converts records to JSON.

``--rounds N`` runs each Debezium setting N times, reference and landing in turn, and gives medians.

    python -m bench.debezium --rows 200000 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
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


def connector_alone(url: str, store: SignalStore, slot: str, how: list[str]) -> float:
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
    return seconds


def debezium_landing(
    url: str, store: SignalStore, slot: str, how: list[str]
) -> tuple[float, float, int, int]:
    """(seconds from the signal to every READ landed, seconds of the JVM's start and an empty drain, peak
    RSS, bytes landed) of ``capture debezium`` with ``how`` (chunk, poll ms, properties)."""
    landing = Path(tempfile.mkdtemp(prefix="cdc-bench-dbz-"))
    dbz = ["capture", "debezium", "--source", url, "--landing", str(landing), "--collections",
           "public.items", "--slot", slot, "--publication", slot, "--chunk-size", how[0], "--poll-ms", how[1],
           *how[2:]]  # fmt: skip
    t_start, _ = measured(cli(*dbz, "--drain"))  # the slot, before the signal
    sid = f"{slot}-signal"
    store.send(Signal(sid, "execute-snapshot", ("public.items",), "incremental"))
    seconds, peak = measured(cli(*dbz, "--drain", "--until-snapshot", sid))
    size = sum(f.stat().st_size for f in landing.rglob("*") if f.is_file())
    shutil.rmtree(landing, ignore_errors=True)
    drop_slot(store.url, slot)
    return seconds, t_start, peak, size


NO_SCHEMAS = ["--property", "converter.schemas.enable=false"]


def debezium_rows(label: str, url: str, store: SignalStore, i: int, how: list[str], n: int, rounds: int,
                  writer: Writer, t_copy: float) -> list[dict]:  # fmt: skip
    """A Debezium setting's rows: per round the connector alone (and, keeping schemas, alone without
    them), then the landing; medians over the rounds, each landing's ratio to its own round's reference."""
    alone, floor, landed, starts, ratios = [], [], [], [], []
    peak = size = ops = 0
    keeps_schemas = "converter.schemas.enable=false" not in how
    for r in range(rounds):
        alone.append(connector_alone(url, store, f"bench_{i}_{r}_alone", how))
        if keeps_schemas:
            floor.append(connector_alone(url, store, f"bench_{i}_{r}_floor", [*how, *NO_SCHEMAS]))
        ops0 = writer.ops
        seconds, t_start, peak_r, size = debezium_landing(url, store, f"bench_{i}_{r}", how)
        ops += writer.ops - ops0
        landed.append(seconds)
        starts.append(t_start)
        ratios.append(alone[-1] / seconds)
        peak = max(peak, peak_r)
    med, med_alone = statistics.median(landed), statistics.median(alone)
    rows = [{"measure": "  reference: Debezium start + empty drain", "items": 0,
             "seconds": statistics.median(starts), "rate": 0},
            {"measure": "  reference: the connector alone, landing nothing", "items": n, "seconds": med_alone,
             "rate": n / med_alone}]  # fmt: skip
    note = f"{med_alone / med:.2f} of the connector alone's rate"
    if rounds > 1:
        note += f" (rounds: {', '.join(f'{x:.2f}' for x in ratios)})"
    if floor:
        med_floor = statistics.median(floor)
        rows.append({"measure": "  reference: the connector alone, no schemas", "items": n,
                     "seconds": med_floor, "rate": n / med_floor})  # fmt: skip
        note += f"; {med_floor / med:.2f} of it without schemas"
    rows.append({
        "measure": label, "items": n, "seconds": med, "rate": n / med,
        "reference": f"{t_copy / med:.3f} of COPY; {note}; peak RSS {peak / 2**20:.0f} MiB; "
                     f"{ops // rounds:,} writer updates; {size / 1e6:.0f} MB landed",
        "reference_name": "COPY", "reference_seconds": t_copy,
    })  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--writes", type=float, default=250, help="writer updates per second (default 250)")
    ap.add_argument("--rounds", type=int, default=1, help="runs of each Debezium setting (default 1)")
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
            for readers in (1, 2):
                landing = Path(tempfile.mkdtemp(prefix="cdc-bench-dbz-"))
                store.send(Signal(f"bench-{readers}", "execute-snapshot", ("public.items",), "incremental",
                                  chunk_size=8192))  # fmt: skip
                ops0 = writer.ops
                seconds, peak = measured(cli("snapshot", "run", "--source", url, "--landing", str(landing),
                                             "--once", "--readers", str(readers)))  # fmt: skip
                size = sum(f.stat().st_size for f in landing.rglob("*") if f.is_file())
                shutil.rmtree(landing, ignore_errors=True)
                rows_out.append({
                    "measure": f"engine, {readers} reader(s)", "items": n, "seconds": seconds, "rate": n / seconds,
                    "reference": f"{t_copy / seconds:.3f} of COPY; peak RSS {peak / 2**20:.0f} MiB; "
                                 f"{writer.ops - ops0:,} writer updates; {size / 1e6:.0f} MB landed",
                    "reference_name": "COPY", "reference_seconds": t_copy,
                })  # fmt: skip
            settings = [
                ("Debezium, defaults (chunk 1024, poll 500 ms)", ["1024", "500"]),
                ("Debezium, tuned (chunk 8192, poll 10 ms)", ["8192", "10"]),
                # without schemas: ingest then types the collections from the catalog (`ingest --source`)
                ("Debezium, tuned, no schemas", ["8192", "10", *NO_SCHEMAS]),
            ]
            for i, (label, how) in enumerate(settings):
                rows_out += debezium_rows(label, url, store, i, how, n, args.rounds, writer, t_copy)
            t_copy_after = copy_reference(pg.url)
        finally:
            writer.stop.set()
            writer.join()
    rows_out.append({"measure": f"  reference: COPY (SELECT ... ORDER BY id), {n:,} rows, writer running",
                     "items": n, "seconds": t_copy, "rate": n / t_copy,
                     "reference": f"again at the end: {n / t_copy_after:,.0f} rows/s"})  # fmt: skip
    report("debezium", rows_out, {"rows": n, "writer_updates_per_second": args.writes, "rounds": args.rounds})
    print("(every figure includes its process start; Debezium's includes the JVM's, see the reference line)")


if __name__ == "__main__":
    main()
