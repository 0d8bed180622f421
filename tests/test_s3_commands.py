"""Every command with the lake on S3 (moto's server, a real process), as a user types it: plain
``s3://bucket/prefix`` locations, the standard AWS settings in the environment, nothing else. And the
locations users mistype: one line, exit 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cdc_backfill.lakepath import S3Path
from tests.support.cli import cli, ok, snapshot_as_typed
from tests.support.pg import plain_url
from tests.support.workload import seed

pytestmark = [pytest.mark.pg, pytest.mark.spark, pytest.mark.slow]


def test_the_whole_path_on_s3_as_typed(fresh_db: str, s3_spark, s3_lake: S3Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    seed(fresh_db, orders=120, lines=60)
    landing, state = f"{s3_lake}/landing", f"{s3_lake}/state"
    url = plain_url(fresh_db)  # postgresql://, as users type it
    collections = ["--collections", "public.orders", "public.lines", "--chunk-size", "25"]
    snapshot_as_typed(tmp_path, url, collections, landing=landing)
    assert not list(tmp_path.iterdir())  # nothing beside the user: the lake is on S3
    src = ("--source", url)

    status = ok(cli(tmp_path, "capture", "status", *src, "--landing", landing))
    assert "landed" in status.lower()
    summary = json.loads(
        ok(cli(tmp_path, "reconcile", "--landing", landing, "--state", state)).splitlines()[-1]
    )
    assert summary["collections"]["public.orders"]["rows"] == 120
    again = cli(tmp_path, "reconcile", "--landing", landing, "--state", state)
    assert again.returncode == 0 and "nothing new" in again.stderr  # read from S3, no Spark started

    listed = ok(cli(tmp_path, "state", "--state", state))
    assert "public.orders" in listed and "public.lines" in listed
    counted = ok(
        cli(tmp_path, "state", "--state", state, "--sql", "SELECT count(*) AS n FROM orders", "--json")
    )
    assert json.loads(counted.splitlines()[0])["n"] == 120
    assert "version" in ok(cli(tmp_path, "state", "--state", state, "public.orders", "--history")).lower()

    verified = ok(
        cli(
            tmp_path,
            "verify",
            *src,
            "--state",
            state,
            "--collection",
            "public.orders",
            "--master",
            "local[2]",
        )
    )
    assert "every range equal" in verified
    reread = ok(cli(tmp_path, "signal", "reread", *src, "--state", state, "--dry-run"))
    assert "nothing to re-read: every row of the state has all its values" in reread
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("location", "says"),
    [
        ("s4://bucket/lake", "s4:// is not a lake location here"),
        ("s3://", "no bucket"),
        ("hdfs://nn/lake", "hdfs:// is not a lake location here"),
    ],
)
def test_a_mistyped_lake_is_one_line_and_exit_2(location: str, says: str, tmp_path: Path) -> None:
    for args in (
        ("reconcile", "--landing", location, "--state", "state"),
        ("reconcile", "--landing", "landing", "--state", location),
        ("state", "--state", location),
    ):
        res = cli(tmp_path, *args)
        assert res.returncode == 2, (args, res.stderr)
        assert says in res.stderr and "Traceback" not in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not list(tmp_path.iterdir())
