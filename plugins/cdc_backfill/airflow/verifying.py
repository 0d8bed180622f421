"""Verify inside an Airflow worker: the logic of ``cdc-backfill verify`` over several collections with one
Spark session, on the hook's engine. Imports Spark only when called."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlalchemy as sa

log = logging.getLogger(__name__)


def verify_collections(
    engine: sa.Engine, state_dir: Path, collections: Sequence[str], ranges: int = 16, master: str = "local[*]"
) -> list[dict[str, Any]]:
    """One report per collection: ``collection``, ``all_equal``, ``differing``, ``summary``, ``verdict``.

    A collection that cannot be verified (no state yet, columns that differ) raises VerifyError.
    """
    from pyspark.sql import SparkSession

    from cdc_backfill.spark.session import build_session
    from cdc_backfill.spark.verify import verify_collection
    from cdc_backfill.verify.compare import render

    existing = SparkSession.getActiveSession()
    spark = build_session("cdc_backfill_verify", master=master)  # reused by each comparison below
    reports = []
    try:
        for collection in collections:
            _source, report = verify_collection(engine, Path(state_dir), collection, ranges, master)
            log.info("%s", render(report))
            reports.append(
                {
                    "collection": collection,
                    "all_equal": report.all_equal,
                    "differing": report.differing,
                    "summary": report.summary(),
                    "verdict": render(report).splitlines()[-1],
                }
            )
    finally:
        if existing is None:
            spark.stop()
    return reports
