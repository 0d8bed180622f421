"""The reconcile on a real Spark standalone cluster (a master and two workers, processes of their own)
over a lake on a real S3 server, submitted as a user types it: ``cdc-backfill reconcile --landing s3://...
--state s3://... --master spark://...``. The executors run in the workers' folders, not the driver's,
and the landing exists nowhere but on S3, so a step that reads a file local to the driver fails here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cdc_backfill.lakepath import S3Path
from tests.conftest import unavailable
from tests.support.cluster import StandaloneCluster
from tests.support.s3 import S3Server, upload
from tests.support.scripts import ENCODERS, Script, records, write_chunk, write_stream_file
from tests.support.state import state_table

pytestmark = [pytest.mark.spark, pytest.mark.slow]
ENC = ENCODERS["debezium-postgresql"]
CLI = Path(sys.executable).parent / "cdc-backfill"


@pytest.fixture(scope="module")
def cluster(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """Started once for the module: a cluster takes a while to come up on a busy 2-core machine."""
    started = StandaloneCluster(tmp_path_factory.mktemp("cluster"), env=s3_server.env)
    try:
        started.start(timeout=120)
    except (OSError, RuntimeError) as exc:
        started.stop()
        unavailable("a Spark standalone cluster", exc)
    try:
        yield started
    finally:
        started.stop()


def test_the_reconcile_runs_on_a_standalone_cluster_over_s3(
    cluster: StandaloneCluster,
    spark: Any,  # the shared local session: the landing's ingest runs here, as `cdc-backfill ingest` would
    s3_lake: S3Path,
    tmp_path: Path,
) -> None:
    from cdc_backfill.ingest.column_sources import ColumnSources
    from cdc_backfill.ingest.spark.job import ingest_landing

    s = Script()
    s.seed(*range(1, 201))
    s.open("c1")
    s.read("c1", *range(1, 201))
    s.update(3, "during")  # inside the window: its READ row is dropped, the update wins
    s.close("c1")
    s.delete(4)
    s.change_key(10, 1010)
    s.insert(500, "after")
    s.insert(501, "after too")
    s.update(500, "after, updated")
    local = tmp_path / "landing"
    write_stream_file(local, "1.jsonl", [r for _, r in records(s, ENC)])
    write_chunk(local, ENC.collection, "c1", s.reads["c1"])
    # the stream's JSON into the typed log, here (a user runs `cdc-backfill ingest` before the reconcile)
    ingest_landing(spark, local, None, ColumnSources(local, ENC.signal))

    landing, state = s3_lake / "landing", s3_lake / "state"
    upload(local, landing)
    shutil.rmtree(local)  # the landing exists only on S3 now: no step can fall back to the driver's disk

    workdir = tmp_path / "cwd"  # an empty working folder: no relative path can resolve to the lake
    workdir.mkdir()
    # the S3 settings are in this process's environment; the product asks Spark for the s3a connector,
    # which the driver hands to the cluster's executors
    env = dict(os.environ)
    before = {app["id"] for app in cluster.status().get("completedapps", [])}
    # --signal-table: the scripted source's (s.cdc_signal), not the default public.cdc_signal, else no
    # window is seen and every READ waits
    done = subprocess.run(
        [str(CLI), "reconcile", "--landing", str(landing), "--state", str(state),
         "--signal-table", ENC.signal, "--master", cluster.master_url],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stderr[-4000:]}\n{cluster.tails()}"
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    info = json.loads(lines[0])["collections"][ENC.collection]
    assert info["rows"] == len(s.truth) and info["reads_dropped"] == 1, info  # key 3's READ: the update won
    assert info["reads_waiting"] == info["windows_pending"] == 0, info

    # the state on S3, read back by pyarrow (no Spark): the source's truth
    rows = {r["id"]: (r["v"], r["big"]) for r in state_table(state, ENC.collection).to_pylist()}
    assert rows == {k: (r["v"], r["big"]) for k, r in s.truth.items()}
    assert not list(workdir.iterdir())  # nothing written beside the user

    # it really ran on the cluster: the master saw the application finish, and each worker ran an
    # executor of it in the app's folder of its work dir, which ran tasks (Spark's executor log, INFO
    # by default: "Running task 0.0 in stage ...")
    apps = [a for a in cluster.status().get("completedapps", []) if a["id"] not in before]
    assert [a["name"] for a in apps] == ["cdc_backfill_reconcile"], apps
    for work in cluster.work_dirs:
        logs = list((work / apps[0]["id"]).glob("*/stderr"))
        assert logs, f"{work}: no executor of {apps[0]['id']}: {sorted(p.name for p in work.iterdir())}"
        assert any("Running task" in log.read_text(errors="replace") for log in logs), logs
