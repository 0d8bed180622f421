"""A cdc_scheduled_backfill__* DAG from a schedules file, run by dag.test() for one logical date: its
snapshot reads exactly the rows of that data interval."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

from tests.airflow.conftest import load_dag

pytestmark = [pytest.mark.airflow, pytest.mark.pg, pytest.mark.slow]

SCHEDULES = """
[[backfill]]
name = "events_daily"
schedule = "@daily"
start_date = 2026-03-01
catchup = true
collections = ['public\\.events']
condition = "updated_at >= '{{{{ data_interval_start }}}}' AND updated_at < '{{{{ data_interval_end }}}}'"
chunk_size = 7
source_conn_id = "cdc_source"
landing_dir = "{landing}"
reconcile = false
"""


def test_one_logical_date_reads_exactly_its_interval(
    airflow_db: str, fresh_db: str, source_conn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = sa.create_engine(fresh_db)
    with engine.begin() as conn:
        conn.execute(
            sa.text("CREATE TABLE events (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, v text)")
        )
        # one row every 50 minutes over three days, the first at midnight of 2026-03-01 (UTC)
        conn.execute(sa.text(
            "INSERT INTO events SELECT i, timestamptz '2026-03-01 00:00:00+00' + i * interval '50 minutes', "
            "'v' || i FROM generate_series(0, 86) i"))  # fmt: skip
        want = {
            r[0]
            for r in conn.execute(sa.text(
                "SELECT id FROM events WHERE updated_at >= '2026-03-02 00:00+00' AND updated_at < '2026-03-03 00:00+00'"))
        }  # fmt: skip
    engine.dispose()
    landing = tmp_path / "lake"
    schedules = tmp_path / "schedules.toml"
    schedules.write_text(SCHEDULES.format(landing=landing))
    monkeypatch.setenv("CDC_BACKFILL_SCHEDULES", str(schedules))

    dag = load_dag("cdc_scheduled_backfill__events_daily", "cdc_scheduled_backfill.py")
    assert dag.catchup is True
    # a manual run at midnight of the 3rd covers the last complete interval: the 2nd
    run = dag.test(logical_date=dt.datetime(2026, 3, 3, tzinfo=dt.UTC))
    assert run.state == "success", {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert (run.data_interval_start, run.data_interval_end) == (
        dt.datetime(2026, 3, 2, tzinfo=dt.UTC),
        dt.datetime(2026, 3, 3, tzinfo=dt.UTC),
    )

    chunks = list((landing / "snapshots" / "public.events").glob("*.parquet"))
    got = [i for f in chunks for i in pq.read_table(f).column("id").to_pylist()]
    assert len(want) == 29 and sorted(got) == sorted(want)  # exactly the interval, each row once
    assert len(chunks) >= 29 // 7
