"""Verify inside an Airflow worker: the logic of ``cdc-backfill verify`` over several collections with one
Spark session. Imports Spark only when called."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def verify_collections(
    url: str, state_dir: Path, collections: Sequence[str], ranges: int = 16, master: str = "local[*]"
) -> list[dict[str, Any]]:
    """One report per collection: ``collection``, ``all_equal``, ``differing``, ``summary``, ``verdict``.

    A collection that cannot be verified (no state yet, columns that differ) raises VerifyError.
    """
    from pyspark.sql import SparkSession

    from cdc_backfill.config import source_engine
    from cdc_backfill.layout import CURRENT, collection_dir
    from cdc_backfill.spark.session import build_session
    from cdc_backfill.spark.verify import compare_state
    from cdc_backfill.verify import VerifyError
    from cdc_backfill.verify.compare import render
    from cdc_backfill.verify.source import read_source

    existing = SparkSession.getActiveSession()
    spark = build_session("cdc_backfill_verify", master=master)  # reused by each comparison below
    engine = source_engine(url, pool_pre_ping=True)
    reports = []
    try:
        for collection in collections:
            current = collection_dir(state_dir, collection) / CURRENT
            if not current.exists():
                raise VerifyError(f"no state at {current}: the reconcile has not written {collection}")
            source = read_source(engine, collection, ranges)
            report = compare_state(current, source, master)
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
        engine.dispose()
        if existing is None:
            spark.stop()
    return reports
