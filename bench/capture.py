"""Capture throughput: changes/s landed by ``capture postgres --drain`` as the typed event log, next to
the raw pgoutput receive rate of the same WAL in the same run (another slot, messages received and
counted, nothing decoded or written).

    python -m bench.capture --changes 200000
"""

from __future__ import annotations

import argparse
import select
import shutil
import tempfile
import uuid
from pathlib import Path

import psycopg2
import psycopg2.extras
import sqlalchemy as sa

from bench.common import report, timed
from cdc_backfill.capture.postgres.loop import DRAIN_PREFIX, PostgresCapture
from cdc_backfill.landing.layout import LOG_DIR
from cdc_backfill.pg.conninfo import libpq_dsn
from cdc_backfill.pg.embedded import EmbeddedPostgres


def raw_receive(url: str, slot: str, publication: str) -> int:
    """Receive every message up to a marker; count row changes. The floor any capture can reach."""
    conn = psycopg2.connect(
        libpq_dsn(url, replication=True), connection_factory=psycopg2.extras.LogicalReplicationConnection
    )
    cur = conn.cursor()
    cur.start_replication(
        slot_name=slot,
        decode=False,
        options={"proto_version": "1", "publication_names": publication, "messages": "true"},
    )
    marker = uuid.uuid4().hex.encode()
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        c.execute(
            sa.text("SELECT pg_logical_emit_message(false, :p, :m)"),
            {"p": DRAIN_PREFIX, "m": marker.decode()},
        )
    engine.dispose()
    changes = 0
    while True:
        msg = cur.read_message()
        if msg is None:
            select.select([cur], [], [], 0.5)
            continue
        kind = msg.payload[0]
        if kind in (0x49, 0x55, 0x44):
            changes += 1
        elif kind == 0x4D and msg.payload.endswith(marker):
            break
    conn.close()
    return changes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--changes", type=int, default=200_000)
    args = ap.parse_args()
    half = args.changes // 2
    landing = Path(tempfile.mkdtemp(prefix="cdc-bench-capture-"))
    with EmbeddedPostgres(settings={"fsync": "off"}) as pg:
        engine = sa.create_engine(pg.url, isolation_level="AUTOCOMMIT")
        with engine.connect() as c:
            c.execute(
                sa.text(
                    "CREATE TABLE customers (id bigint PRIMARY KEY, name text, email text, balance numeric(12,2), updated_at timestamptz, active bool)"
                )
            )
        PostgresCapture(pg.url, landing, roll_bytes=64 << 20).setup()
        with engine.connect() as c:
            c.execute(sa.text("SELECT pg_create_logical_replication_slot('bench_raw_1', 'pgoutput')"))
            c.execute(sa.text("SELECT pg_create_logical_replication_slot('bench_raw_2', 'pgoutput')"))
            for start in range(0, half, 5000):  # inserts, then updates, 5000 rows a transaction
                c.execute(
                    sa.text(
                        "INSERT INTO customers SELECT i, 'customer ' || i, 'c' || i || '@example.org', i * 1.25, now(), true "
                        f"FROM generate_series({start + 1}, {min(half, start + 5000)}) i"
                    )
                )
            for start in range(0, half, 5000):
                c.execute(
                    sa.text(
                        f"UPDATE customers SET balance = balance + 1, active = false WHERE id BETWEEN {start + 1} AND {start + 5000}"
                    )
                )
        engine.dispose()
        # The raw reference runs before and after the capture (a cold and a warm read of the same WAL);
        # the faster of the two is the one compared with.
        t_raw1, n_raw = timed(lambda: raw_receive(pg.url, "bench_raw_1", "cdc_backfill"))
        t_cap, stats = timed(lambda: PostgresCapture(pg.url, landing, roll_bytes=64 << 20).run())
        t_raw2, n_raw2 = timed(lambda: raw_receive(pg.url, "bench_raw_2", "cdc_backfill"))
        assert n_raw == n_raw2
        t_raw = min(t_raw1, t_raw2)
    size = sum(f.stat().st_size for f in (landing / LOG_DIR).rglob("*.parquet"))
    shutil.rmtree(landing, ignore_errors=True)
    assert n_raw == args.changes == stats.events, (n_raw, stats.events)
    raw_rate = n_raw / t_raw
    rows = [
        {"measure": "capture postgres --drain (parse, type, land, fsync)", "items": stats.events, "seconds": t_cap,
         "rate": stats.events / t_cap, "reference": f"{(stats.events / t_cap) / raw_rate:.2f} of raw receive",
         "reference_name": "raw pgoutput receive", "reference_seconds": t_raw},
        {"measure": "  reference: raw pgoutput receive, same WAL", "items": n_raw, "seconds": t_raw, "rate": n_raw / t_raw},
    ]  # fmt: skip
    report("capture", rows, {"changes": args.changes, "log_megabytes": round(size / 1e6, 1),
                             "raw_seconds": [t_raw1, t_raw2]})  # fmt: skip
    print(
        f"(log: {size / 1e6:.0f} MB in {stats.files} file(s); timings include connecting and the drain marker)"
    )


if __name__ == "__main__":
    main()
