"""Verify inside an Airflow worker: the logic of ``cdc-backfill verify`` over several collections with one
Spark session, on the hook's SQLAlchemy engine, at one position where the DAG's capture can pass it. Imports Spark
only when called."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdc_backfill.lakepath import lake_path

if TYPE_CHECKING:
    import sqlalchemy as sa

log = logging.getLogger(__name__)


def verify_collections(
    url: str,
    sa_engine: sa.Engine,
    state_dir: Path,
    collections: Sequence[str],
    ranges: int = 16,
    master: str = "local[*]",
    *,
    landing: Path | None = None,
    capture: str | None = None,
    signal_table: str | None = None,
) -> list[dict[str, Any]]:
    """One report per collection: ``collection``, ``all_equal``, ``differing``, ``summary``, ``verdict``
    and ``position`` (the one both sides were read at; None when not at one position, ``not_exact``
    saying why).

    A collection that cannot be verified (no state yet, columns that differ) raises VerifyError.
    """
    from pyspark.sql import SparkSession

    from cdc_backfill.capture.catch_up import reach
    from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE
    from cdc_backfill.spark.session import build_session
    from cdc_backfill.verify.compare import render
    from cdc_backfill.verify.spark.at_position import verify_collections as verify_here

    ways = reach(url, landing, signal_table, capture)
    existing = SparkSession.getActiveSession()
    spark = build_session("cdc_backfill_verify", master=master, lake=[state_dir])  # reused below
    reports = []
    try:
        done = verify_here(
            url, sa_engine, lake_path(state_dir), collections, ranges, landing=landing, catch_up=ways.catch_up,
            refresh=ways.refresh, not_exact=ways.not_exact, signal_table=signal_table or DEFAULT_SIGNAL_TABLE, master=master,
        )  # fmt: skip
        for item in done:
            report = item.report
            log.info("%s", render(report))
            reports.append(
                {
                    "collection": report.collection,
                    "all_equal": report.all_equal,
                    "differing": report.differing,
                    "changing": list(report.changing),
                    "summary": report.summary(),
                    "verdict": render(report).splitlines()[-1],
                    "position": report.extra.get("position"),
                    "not_exact": report.extra.get("not_at_position"),
                }
            )
    finally:
        if existing is None:
            spark.stop()
    return reports
