"""Committing a batch of change events to the landing: today's roll manifest next to one Delta table a
collection (delta-rs) whose append commits carry the Kafka offsets as application transactions, measured
in the same run, on local disk, without Spark (pure Python and delta-rs: light on the CPU).

A batch is one collection's events (``--rows`` rows of six columns: the position key, the op, the source
timestamp, an int key, a text, a timestamp) read from 4 Kafka partitions. Each batch is committed by:

- ``manifest`` (the reference): what ``capture kafka``'s commit does after Spark wrote its part file
  (``ingest.spark.job.land``): the part file staged, moved into the version folder under its position
  name (``ingest.spark.log_files.name_files``: fsync, rename, fsync of the folder), then one manifest
  (``ingest.spark.job.write_manifest``: ``files.write_new``, a hard link of a fsynced temporary file) naming
  the file and recording each partition's offset range under ``kafka``; the staging folder removed;
- ``manifest, no fsync``: the same with ``os.fsync`` a no-op (delta-rs does not fsync a local file);
- ``delta write_deltalake``: ``write_deltalake(uri, batch, mode="append", commit_properties=
  CommitProperties(app_transactions=[Transaction(app_id="<topic>[<p>]", version=<to>)], ...))``;
- ``delta add-action``: as Spark would leave it (pyarrow writes the part file into the table's folder),
  then the driver commits it as the state does (``DeltaTable.create_write_transaction([AddAction])``,
  stats from ``state.file_stats.file_stats``) with the same commit properties.

Then, after K batches (``--resume-at``), the next run's start offsets (today ``roll_manifests`` +
``ingest.kafka_offsets.committed``, and ``capture_kafka``'s whole pre-plan under the ingest lock; Delta: open the
table and ``transaction_version`` of each partition) and the files a reader must read after a known
position (today ``reconcile.runs.landed_log_files``; Delta: every file of the table, or those added after
a known table version). Delta writes a checkpoint every 100 commits by default: the commits that wrote
one are counted and timed apart.

    PYTHONPATH=plugins python bench/landing_commit.py [--quick] [--rows 1000] [--batches 200]
        [--resume-at 200 1000] [--large-rows 200000] [--large-batches 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Schema, Transaction, WriterProperties, write_deltalake
from deltalake import transaction as tx

from cdc_backfill.eventlog.buffers import position_key_array
from cdc_backfill.eventlog.counts import KEYS
from cdc_backfill.eventlog.schema import OP, POSITION, TS_MS
from cdc_backfill.events.positions import position_key
from cdc_backfill.ingest.inputs import ingest_lock, remove_unnamed
from cdc_backfill.ingest.kafka_offsets import OffsetRange, Plan, committed

# write_manifest is plain Python; its module imports pyspark (no JVM is started)
from cdc_backfill.ingest.spark.job import write_manifest
from cdc_backfill.ingest.spark.log_files import name_files
from cdc_backfill.kafka.topics import Partition
from cdc_backfill.lakepath import rmtree
from cdc_backfill.landing.layout import LOG_DIR, log_version_dir, staging_dir
from cdc_backfill.landing.manifests import roll_manifests
from cdc_backfill.reconcile.runs import landed_log_files
from cdc_backfill.state.file_stats import file_stats

RESULTS = Path(__file__).resolve().parent / "results"
TOPIC, COLLECTION, PARTITIONS = "app.public.t", "public.t", 4
LSN0, TS0 = 0x1_0000_0000, 1_700_000_000_000
SCHEMA = pa.schema([
    pa.field(POSITION, pa.binary(), nullable=False),
    pa.field(OP, pa.string(), nullable=False),
    pa.field(TS_MS, pa.int64()),
    pa.field("id", pa.int64()),
    pa.field("name", pa.string()),
    pa.field("updated_at", pa.timestamp("us", tz="UTC")),
])  # fmt: skip
ZSTD = WriterProperties(compression="ZSTD")  # as the log files (Spark's and files.write_parquet)
ROLL_KEY = "cdc_backfill.roll"  # the Delta commit's info: what the manifest records beside files/offsets
REPEAT = 5


@dataclass
class Batch:
    n: int
    table: pa.Table
    plan: Plan
    last: bytes  # the position key of its last event
    counts: dict[str, int]


def make_batch(n: int, rows: int) -> Batch:
    """Batch ``n`` of ``rows`` events; partition p's records ``[n*rows/4, (n+1)*rows/4)``."""
    first = n * rows
    lsns = range(LSN0 + 8 * first, LSN0 + 8 * (first + rows), 8)
    positions = [(lsn, lsn) for lsn in lsns]  # Debezium PostgreSQL: (commit LSN, LSN)
    ts = pa.array(range(TS0 + first, TS0 + first + rows), pa.int64())
    ids = pa.array(range(first, first + rows), pa.int64())
    table = pa.Table.from_arrays(
        [
            position_key_array(positions),
            pa.repeat(pa.scalar("u"), rows),
            ts,
            ids,
            pc.binary_join_element_wise("name ", pc.cast(ids, pa.string()), ""),
            pc.cast(pc.multiply(ts, 1000), pa.timestamp("us", tz="UTC")),
        ],
        schema=SCHEMA,
    )
    per = rows // PARTITIONS
    ranges = tuple(OffsetRange(Partition(TOPIC, p), n * per, (n + 1) * per) for p in range(PARTITIONS))
    counts = {k: 0 for k in KEYS} | {"u": rows}
    return Batch(n, table, Plan(ranges), position_key(positions[-1]), counts)


def app_id(part: Partition) -> str:
    return str(part)  # "<topic>[<partition>]": one Delta application transaction a Kafka partition


def commit_properties(b: Batch) -> CommitProperties:
    roll = {"position": [int(x) for x in positions_of(b)], "events": b.table.num_rows, "counts": b.counts}
    return CommitProperties(
        custom_metadata={ROLL_KEY: json.dumps(roll)},
        app_transactions=[Transaction(app_id=app_id(r.part), version=r.end) for r in b.plan.ranges],
    )


def positions_of(b: Batch) -> tuple[int, ...]:
    from cdc_backfill.events.positions import position_of_key

    return position_of_key(b.last)


@contextmanager
def no_fsync() -> Iterator[None]:
    real = os.fsync
    os.fsync = lambda fd: None
    try:
        yield
    finally:
        os.fsync = real


class Manifests:
    """Today: the ingest's commit of Spark's part file (``land`` after ``write_collections``)."""

    def __init__(self, root: Path, fsync: bool = True) -> None:
        self.root = root
        self.landing = root / "landing"
        self.fsync = fsync

    def commit(self, b: Batch) -> None:
        with nullcontext() if self.fsync else no_fsync():
            run = f"20260101T{b.n:09d}"
            stage = staging_dir(self.landing) / run
            out = stage / COLLECTION
            out.mkdir(parents=True)
            # Spark's part file: written, not fsynced (name_files makes it durable)
            pq.write_table(b.table, out / f"part-00000-{uuid.uuid4()}-c000.zstd.parquet", compression="zstd")
            named = name_files(out, log_version_dir(self.landing, COLLECTION, 1), run, start=0)
            written = [p.relative_to(self.landing / LOG_DIR).as_posix() for p in named]
            totals = {COLLECTION: {"last": b.last, **b.counts}}
            n = b.table.num_rows
            summary = {"events": n, "collections": {COLLECTION: {"events": n}}, "quarantined": 0}
            write_manifest(self.landing, run, b.plan.manifest_entries(), written, totals, summary)
            rmtree(stage)


class DeltaWrite:
    """One Delta table a collection, each batch ``write_deltalake(..., mode="append")``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / "delta" / COLLECTION
        self.uri = str(self.path)
        self.checkpoint = -1

    def commit(self, b: Batch) -> None:
        write_deltalake(
            self.uri, b.table, mode="append", writer_properties=ZSTD, commit_properties=commit_properties(b)
        )

    def checkpointed(self) -> bool:
        """A new checkpoint since the last call (``_delta_log/_last_checkpoint``)."""
        marker = self.path / "_delta_log" / "_last_checkpoint"
        version = json.loads(marker.read_text())["version"] if marker.exists() else -1
        new, self.checkpoint = version != self.checkpoint, version
        return new


class DeltaKept(DeltaWrite):
    """``write_deltalake`` into one ``DeltaTable`` kept open across batches (a long-running writer): the
    table's state moves forward with each commit instead of being read again from the last checkpoint."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.table: DeltaTable | None = None

    def commit(self, b: Batch) -> None:
        props = commit_properties(b)
        write_deltalake(
            self.table or self.uri, b.table, mode="append", writer_properties=ZSTD, commit_properties=props
        )
        if self.table is None:
            self.table = DeltaTable(self.uri)


class DeltaAddAction(DeltaWrite):
    """Spark's part file in the table's folder, committed by the driver as ``state.table`` commits."""

    def commit(self, b: Batch) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        name = f"part-{b.n:05d}-{uuid.uuid4()}-c000.zstd.parquet"
        path = self.path / name
        pq.write_table(b.table, path, compression="zstd")
        st = path.stat()
        add = tx.AddAction(name, st.st_size, {}, int(st.st_mtime * 1000), True, file_stats(path))
        if b.n == 0:
            tx.create_table_with_add_actions(
                self.uri,
                Schema.from_arrow(SCHEMA),
                [add],
                mode="error",
                commit_properties=commit_properties(b),
            )
        else:
            DeltaTable(self.uri).create_write_transaction(
                [add], mode="append", schema=SCHEMA, commit_properties=commit_properties(b)
            )


def ms(seconds: list[float]) -> tuple[float, float]:
    xs = sorted(seconds)
    return statistics.median(xs) * 1000, xs[min(len(xs) - 1, int(0.95 * len(xs)))] * 1000


def best(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Median seconds of ``REPEAT`` calls, and the last result."""
    times, out = [], None
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


class Out:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def head(self, text: str) -> None:
        print(f"\n{text}")

    def line(
        self, measure: str, value: str, reference: float | None, number: float | None, of: str = "ref"
    ) -> None:
        ratio = f"{number / reference:.2f}x {of}" if reference and number is not None else "ref"
        print(f"  {measure:<60} {value:>26}  {ratio}")
        self.rows.append({"measure": measure, "value": value, "ratio": ratio})

    def note(self, text: str) -> None:
        print(f"  {text}")
        self.rows.append({"note": text})


def run_batches(
    writers: dict[str, Any],
    first: int,
    count: int,
    rows: int,
    lat: dict[str, list[float]],
    ck: dict[str, Any],
) -> None:
    """Batches ``first`` to ``first + count - 1`` through every writer, in a rotating order."""
    names = list(writers)
    for n in range(first, first + count):
        b = make_batch(n, rows)
        k = n % len(names)
        for name in names[k:] + names[:k]:
            w = writers[name]
            t0 = time.perf_counter()
            w.commit(b)
            dt = time.perf_counter() - t0
            lat.setdefault(name, []).append(dt)
            if isinstance(w, DeltaWrite):
                (ck[name]["with"] if w.checkpointed() and n > 0 else ck[name]["without"]).append(dt)


def latency(out: Out, lat: dict[str, list[float]], names: list[str], lo: int, hi: int) -> None:
    ref = ms(lat[names[0]][lo:hi])
    for name in names:
        med, p95 = ms(lat[name][lo:hi])
        out.line(name, f"{med:7.1f} ms, p95 {p95:7.1f} ms", ref[0] if name != names[0] else None, med)


def resume_and_read(out: Out, today: Manifests, delta: DeltaWrite, k: int, rows: int) -> None:
    per = rows // PARTITIONS
    want = {Partition(TOPIC, p): k * per for p in range(PARTITIONS)}
    out.head(f"3. resume after K={k} batches: the next run's start offsets (median of {REPEAT})")

    def today_offsets() -> dict[Partition, int]:
        return committed(roll_manifests(today.landing))

    def today_preplan() -> dict[Partition, int]:  # capture_kafka, up to plan()
        with ingest_lock(today.landing):
            remove_unnamed(today.landing)
            manifests = roll_manifests(today.landing)
            done = committed(manifests)
            max((m["position"][0] for m in manifests if m["position"]), default=0)
        return done

    def delta_offsets() -> dict[Partition, int]:
        table = DeltaTable(delta.uri)
        return {p: table.transaction_version(app_id(p)) for p in want}

    def delta_with_position() -> dict[Partition, int]:  # and the last commit's position (history(1))
        table = DeltaTable(delta.uri)
        json.loads(table.history(1)[0][ROLL_KEY])
        return {p: table.transaction_version(app_id(p)) for p in want}

    ref, got = best(today_offsets)
    assert got == want, got
    out.line("manifest: roll_manifests + committed", f"{ref * 1000:9.1f} ms", None, ref)
    for label, fn in [
        ("manifest: capture_kafka pre-plan (lock, remove_unnamed)", today_preplan),
        ("delta: DeltaTable() + transaction_version x4", delta_offsets),
        ("delta: ... + history(1) (last position)", delta_with_position),
    ]:
        t, got = best(fn)
        assert got == want, (label, got)
        out.line(label, f"{t * 1000:9.1f} ms", ref, t)

    behind = max(1, k // 10)
    seen = k - behind  # batches 0 .. seen-1 read: the reader knows batch seen-1's last position, version
    x = make_batch(seen - 1, rows)
    out.head(
        f"4. read after a known position, K={k}: the files of the last {behind} batches (median of {REPEAT})"
    )

    def today_files() -> list[str]:
        from cdc_backfill.events.positions import position_of_key

        return landed_log_files(today.landing, position_of_key(x.last)).files

    def delta_all() -> list[str]:
        return DeltaTable(delta.uri).file_uris()

    def delta_diff() -> list[str]:
        old = set(DeltaTable(delta.uri, version=seen - 1).file_uris())
        return [f for f in DeltaTable(delta.uri).file_uris() if f not in old]

    def delta_commits() -> list[str]:  # the commits after the known version, from the log itself
        now = DeltaTable(delta.uri).version()
        files = []
        for v in range(seen, now + 1):
            for line in (delta.path / "_delta_log" / f"{v:020d}.json").read_text().splitlines():
                action = json.loads(line)
                if "add" in action and action["add"].get("dataChange", True):
                    files.append(action["add"]["path"])
        return files

    ref, got = best(today_files)
    # the manifest of the known position itself is listed again (name > position key): unread() drops it
    assert len(got) in (behind, behind + 1), len(got)
    out.line(f"manifest: landed_log_files after X ({len(got)} files)", f"{ref * 1000:9.1f} ms", None, ref)
    for label, fn, n in [
        ("delta: file_uris(), whole table", delta_all, k),
        ("delta: file_uris() now minus at version X", delta_diff, behind),
        ("delta: adds of commits after X (_delta_log JSON)", delta_commits, behind),
    ]:
        t, got = best(fn)
        assert len(got) == n, (label, len(got), n)
        out.line(f"{label} ({n} files)", f"{t * 1000:9.1f} ms", ref, t)


def disk(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def concurrent_check(root: Path) -> str:
    """Two writers that read the same transaction version and commit the same app id: refused?"""
    uri = str(root / "concurrent")
    t = pa.table({"id": [1]})

    def props(v: int) -> CommitProperties:
        return CommitProperties(app_transactions=[Transaction(app_id=f"{TOPIC}[0]", version=v)])

    write_deltalake(uri, t, mode="append", commit_properties=props(10))
    a, b = DeltaTable(uri), DeltaTable(uri)
    write_deltalake(a, t, mode="append", commit_properties=props(20))
    try:
        write_deltalake(b, t, mode="append", commit_properties=props(20))
    except Exception as exc:
        return f"refused ({type(exc).__name__}: {str(exc).splitlines()[0][:70]})"
    return f"COMMITTED twice: {DeltaTable(uri).count()} rows"


def make_writers(root: Path) -> dict[str, Any]:
    return {
        "manifest (today, reference)": Manifests(root / "m"),
        "manifest, no fsync": Manifests(root / "mn", fsync=False),
        "delta write_deltalake (opens the table)": DeltaWrite(root / "dw"),
        "delta write_deltalake, kept open": DeltaKept(root / "dk"),
        "delta add-action commit (opens the table)": DeltaAddAction(root / "da"),
    }


def checkpoints(
    out: Out, writers: dict[str, Any], lat: dict[str, list[float]], ck: dict[str, Any], done: int
) -> None:
    out.head(f"checkpoints (delta.checkpointInterval default 100) over {done} commits")
    for name in [n for n in ck if n in writers]:
        w, c = ck[name]["with"], ck[name]["without"]
        cks = sorted((writers[name].path / "_delta_log").glob("*.checkpoint.parquet"))
        med, wmed = statistics.median(c) * 1000, statistics.median(w) * 1000 if w else None
        label = name.split(" (")[0]
        out.line(
            f"{label}: the {len(w)} commits that checkpointed", f"{wmed or 0:7.1f} ms", med, wmed, "others"
        )
        # the table's state is read again from the last checkpoint: later commits replay more JSON
        early = [t for n, t in enumerate(lat[name]) if 1 <= n % 100 <= 10]
        late = [t for n, t in enumerate(lat[name]) if 90 <= n % 100 <= 99]
        if early and late:
            e, la = statistics.median(early) * 1000, statistics.median(late) * 1000
            out.line("  commits 1-10 vs 90-99 after a checkpoint", f"{e:5.1f} vs {la:5.1f} ms", e, la, "1-10")
        size = cks[-1].stat().st_size / 1024 if cks else 0
        out.note(f"  {label}: {len(cks)} checkpoint file(s), the last {size:.0f} KiB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1000, help="rows of a small batch")
    ap.add_argument("--batches", type=int, default=200, help="small batches timed with every commit kind")
    ap.add_argument(
        "--resume-at",
        type=int,
        nargs="+",
        default=[200, 1000],
        help="K: batches before resume (200 2000: ~5 min)",
    )
    ap.add_argument("--large-rows", type=int, default=200_000)
    ap.add_argument("--large-batches", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="100 batches, K=100 300, 4 large batches of 50,000")
    args = ap.parse_args()
    if args.quick:
        args.batches, args.resume_at, args.large_rows, args.large_batches = 100, [100, 300], 50_000, 4
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="bench-landing-commit-"))
    out = Out()
    print(f"landing commit: manifest (today, the reference) vs Delta append + app transactions; {work}")

    small = work / "small"
    writers = make_writers(small)
    lat: dict[str, list[float]] = {}
    ck: dict[str, Any] = {
        n: {"with": [], "without": []} for n, w in writers.items() if isinstance(w, DeltaWrite)
    }
    run_batches(writers, 0, args.batches, args.rows, lat, ck)
    out.head(f"1. commit latency, {args.batches} batches of {args.rows:,} rows (median, p95 per batch)")
    latency(out, lat, list(writers), 0, args.batches)
    # beyond them: the reference, and the two delta-rs writers (the add-action commit opens the table
    # as write_deltalake does, and costs the same: left out to keep the run short)
    for gone in ("manifest, no fsync", "delta add-action commit (opens the table)"):
        rmtree(writers.pop(gone).root)
    today, delta = writers["manifest (today, reference)"], writers["delta write_deltalake (opens the table)"]
    done = args.batches
    for k in sorted(args.resume_at):
        if k > done:
            run_batches(writers, done, k - done, args.rows, lat, ck)
            tail = min(200, k - done)
            out.head(f"1b. commit latency at batches {k - tail + 1}-{k} (after {k - tail} commits)")
            latency(out, lat, list(writers), k - tail, k)
            done = k
        resume_and_read(out, today, delta, k, args.rows)
    checkpoints(out, writers, lat, ck, done)
    m_files, m_bytes = disk(today.landing / LOG_DIR / "_rolls")
    d_files, d_bytes = disk(delta.path / "_delta_log")
    out.note(f"metadata after {done} batches: _rolls {m_files} files {m_bytes / 1e6:.1f} MB; "
             f"_delta_log {d_files} files {d_bytes / 1e6:.1f} MB")  # fmt: skip
    rmtree(small)

    large = work / "large"
    writers = make_writers(large)
    lat = {}
    ck = {n: {"with": [], "without": []} for n, w in writers.items() if isinstance(w, DeltaWrite)}
    run_batches(writers, 0, args.large_batches, args.large_rows, lat, ck)
    out.head(f"2. commit latency, {args.large_batches} batches of {args.large_rows:,} rows (median, p95)")
    latency(out, lat, list(writers), 0, args.large_batches)
    sizes = {
        n: disk(w.path if isinstance(w, DeltaWrite) else w.landing / LOG_DIR)[1] for n, w in writers.items()
    }
    out.note("data on disk: " + ", ".join(f"{n.split(' (')[0]} {b / 1e6:.1f} MB" for n, b in sizes.items()))

    out.head("traps")
    out.note(f"two writers, same app id, same read version: second {concurrent_check(work)}")
    dw = writers["delta write_deltalake (opens the table)"].uri
    stats = json.loads(
        file_stats(next(writers["delta add-action commit (opens the table)"].path.glob("*.parquet")))
    )
    actions = pa.table(DeltaTable(dw).get_add_actions(flatten=True))
    out.note(f"min/max stats of {POSITION} (binary): file_stats {POSITION in stats['minValues']}, "
             f"delta-rs {'min.' + POSITION in actions.column_names}")  # fmt: skip
    out.note(f"protocol {DeltaTable(dw).protocol()}")
    total = time.perf_counter() - started
    out.note(f"total {total:.0f} s")
    rmtree(work)
    RESULTS.mkdir(exist_ok=True)
    meta = {"benchmark": "landing_commit", "machine": platform.node(), "python": platform.python_version(),
            "args": vars(args), "seconds": round(total, 1)}  # fmt: skip
    (RESULTS / "landing_commit.json").write_text(json.dumps({**meta, "rows": out.rows}, indent=2))


if __name__ == "__main__":
    main()
