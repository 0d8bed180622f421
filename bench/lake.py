"""The reconcile with the lake on an S3 server next to the same run on local disk, in one run, on the
same typed log, and where the difference goes.

The S3 server is moto's, started here as a process on 127.0.0.1 (a Python server keeping objects in
memory: what it shows is the cost of going through S3's protocol, Spark's s3a connector and delta-rs'
object store, not a real store's latency or bandwidth). Spark reaches it through the s3a connector the
product asks for (``spark.packages.s3_connector``).

Each round runs the reconcile of the same landing twice, local then S3, each into a fresh state, and
the floor (the typed log read, the latest event per key, Parquet written) on each store; the median of
the rounds is printed. The reconcile's own steps are timed by wrapping them in this process: the plan
(listing the landing, reading its manifests, schema documents and chunk footers), the state's write
(Spark writing the version's files: as Spark is lazy, this runs the merge's last stage too, and the
output committer's renames, which s3a does as copy and delete), its Delta commit, the vacuum and the
run record; the rest is the Spark jobs the reconcile runs before the write.

    python -m bench.lake --events 1000000
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import report
from bench.reconcile import COLLECTION, LOG_DIR, log_floor, make_landing, reuse_or_make_landing
from tests.support.s3 import S3Server, upload

STEPS: dict[str, list[float]] = defaultdict(list)  # step -> seconds, appended by the wrappers


def timed_step(name: str, fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*a: Any, **kw: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            STEPS[name].append(time.perf_counter() - t0)

    return wrapper


def instrument() -> None:
    """The reconcile's steps that touch the store from the driver, timed where the job calls them."""
    from cdc_backfill.reconcile.spark import job
    from cdc_backfill.state.spark import frames
    from cdc_backfill.state.table import StateTable

    job.planned_runs = timed_step("plan: list the landing, manifests, schemas", job.planned_runs)
    job.landed_log_files = timed_step("plan: list the landing, manifests, schemas", job.landed_log_files)
    job.write_run_record = timed_step("run record", job.write_run_record)
    StateTable.commit = timed_step("state: Delta commit (delta-rs)", StateTable.commit)  # type: ignore[method-assign]
    StateTable.vacuum = timed_step("state: vacuum (delta-rs)", StateTable.vacuum)  # type: ignore[method-assign]
    job.write_version = timed_step("state: write (Spark) and commit", job.write_version)
    frames.write_version = job.write_version


def one_run(spark: Any, landing: Any, state: Any) -> tuple[float, dict[str, float]]:
    from cdc_backfill.reconcile.spark.job import reconcile_landing

    STEPS.clear()
    t0 = time.perf_counter()
    reconcile_landing(spark, landing, state)
    total = time.perf_counter() - t0
    steps = {k: sum(v) for k, v in STEPS.items()}
    write = steps.pop("state: write (Spark) and commit", 0.0)
    steps["state: write (Spark)"] = write - steps.get("state: Delta commit (delta-rs)", 0.0)
    steps["Spark: read the log, judge, merge"] = (
        total
        - write
        - sum(v for k, v in steps.items() if not k.startswith("state:"))
        - steps.get("state: vacuum (delta-rs)", 0.0)
    )
    return total, steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--landing", type=Path, help="a folder to keep and reuse the generated landing in")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="cdc-bench-lake-"))
    landing = reuse_or_make_landing((args.landing or work / "landing").resolve(), args.events, 5000)
    server = S3Server(work / "moto.log").start()
    os.environ.update(server.env)  # every reader and writer, Spark's session included, reaches it
    try:
        from cdc_backfill.lakepath import S3Path
        from cdc_backfill.spark.session import build_session
        from cdc_backfill.state.table import current_version

        lake = S3Path(server.new_bucket(), "lake")
        t0 = time.perf_counter()
        upload(landing.log, lake / "landing")
        t_upload = time.perf_counter() - t0
        spark = build_session("bench_lake", master="local[2]", lake=["s3://bench"])  # s3a connector
        instrument()
        # warm-up on a small landing on each store: JIT, s3a's classes and clients, delta-rs' store
        warm = make_landing(work / "warm", 20_000)
        upload(warm.log, lake / "warm")
        one_run(spark, warm.log, work / "warm-state")
        one_run(spark, lake / "warm", lake / "warm-state")

        local_landing = landing.log
        s3_landing = lake / "landing"
        runs: dict[str, list[float]] = defaultdict(list)
        steps: dict[str, dict[str, list[float]]] = {"local": defaultdict(list), "s3": defaultdict(list)}
        files = f"{LOG_DIR}/{COLLECTION}/v0001"
        for r in range(args.rounds):
            for where, src, state in (
                ("local", local_landing, work / f"state-{r}"),
                ("s3", s3_landing, lake / f"state-{r}"),
            ):
                total, parts = one_run(spark, src, state)
                runs[where].append(total)
                for k, v in parts.items():
                    steps[where][k].append(v)
                current = current_version(state, COLLECTION)
                assert current is not None
                assert sum(n or 0 for n in current.file_rows) == len(landing.live)  # every live key, once
                t0 = time.perf_counter()
                floor_out = work / f"floor-{r}" if where == "local" else lake / f"floor-{r}"
                log_floor(spark, str(src / files), floor_out)  # type: ignore[arg-type]
                runs[f"{where}_floor"].append(time.perf_counter() - t0)
        spark.stop()
    finally:
        server.stop()

    med = {k: statistics.median(v) for k, v in runs.items()}
    n = landing.events
    rows = [
        {"measure": "reconcile, lake on local disk", "items": n, "seconds": med["local"],
         "rate": n / med["local"], "reference": f"floor {med['local_floor']:.2f}s",
         "reference_name": "floor, local disk", "reference_seconds": med["local_floor"]},
        {"measure": "reconcile, lake on the S3 server (moto)", "items": n, "seconds": med["s3"],
         "rate": n / med["s3"],
         "reference": f"{med['s3'] / med['local']:.2f}x local; floor on S3 {med['s3_floor']:.2f}s "
                      f"({med['s3_floor'] / med['local_floor']:.2f}x local floor)",
         "reference_name": "the same reconcile, local disk", "reference_seconds": med["local"]},
    ]  # fmt: skip
    for name in sorted(steps["local"]):
        lo, s3 = statistics.median(steps["local"][name]), statistics.median(steps["s3"][name])
        rows.append({"measure": f"  {name}", "items": n, "seconds": s3, "rate": n / s3 if s3 else 0.0,
                     "reference": f"local {lo:.2f}s, +{s3 - lo:.2f}s on S3"})  # fmt: skip
    report(
        f"lake_{args.events}",
        rows,
        {"events": n, "rounds": args.rounds, "upload_seconds": round(t_upload, 2),
         "runs": {k: [round(x, 2) for x in v] for k, v in runs.items()}},
    )  # fmt: skip
    print(f"(the landing's upload to the S3 server, not in the figures: {t_upload:.1f}s)")


if __name__ == "__main__":
    main()
