"""Verify where the source cannot be read at an exact position (a Debezium landing, a landing no drain
or fence reaches, no landing at all): the source read now against the state advanced over everything
landed (in memory, never written), and each range that differs re-checked after the landing is
brought up to now (``refresh``), until it is equal, known to differ, or has kept changing for
``ROUNDS`` re-checks (the rules: ``verify.recheck``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import SparkSession

from cdc_backfill.capture.publication import CaptureError
from cdc_backfill.landing.stream import stream_files
from cdc_backfill.state.spark.frames import read_version
from cdc_backfill.verify import VerifyError
from cdc_backfill.verify.compare import RangeStats, compare
from cdc_backfill.verify.recheck import ROUNDS, pending, recheck
from cdc_backfill.verify.source_side import SourceSide, read_source, read_stats, read_table
from cdc_backfill.verify.spark.at_position import AtPosition, state_at
from cdc_backfill.verify.spark.range_stats import current_state, frame_stats, no_state_reason

if TYPE_CHECKING:
    import sqlalchemy as sa

log = logging.getLogger(__name__)


def _state_stats(
    spark: SparkSession,
    landing: Path | None,
    state_dir: Path,
    collection: str,
    source: SourceSide,
    signal_table: str,
) -> dict[int, RangeStats]:
    """The state's count and hash per range: advanced over the landed stream when there is a landing,
    else as its last reconcile wrote it."""
    if landing is None:
        current = current_state(state_dir, collection)
        if current is None:
            raise VerifyError(no_state_reason(state_dir, collection))
        return frame_stats(read_version(spark, current), source)
    if stream_files(landing):  # a Debezium landing's batches: into the log first, as a reconcile would
        from cdc_backfill.ingest.column_sources import ColumnSources
        from cdc_backfill.ingest.spark.job import ingest_landing

        ingest_landing(spark, landing, None, ColumnSources(landing, signal_table))
    return frame_stats(state_at(spark, landing, state_dir, collection, None, signal_table), source)


def verify_now(
    sa_engine: sa.Engine,
    landing: Path | None,
    state_dir: Path,
    collections: Sequence[str],
    ranges: int,
    *,
    refresh: Callable[[], None] | None,
    not_exact: str,
    signal_table: str,
    master: str = "local[*]",
    rounds: int = ROUNDS,
) -> list[AtPosition]:
    """Each collection's report, ``not_at_position`` saying why, with the ranges that kept changing."""
    from cdc_backfill.spark.session import build_session

    for coll in collections:  # before the source is read: a typo is named at once
        if current_state(state_dir, coll) is None:
            raise VerifyError(no_state_reason(state_dir, coll))
    with (
        sa_engine.connect() as conn
    ):  # a table the source lacks, or without a key: refused before Spark starts
        for coll in collections:
            read_table(conn, coll)
    log.info("not verifying at one position: %s", not_exact)
    existing = SparkSession.getActiveSession()
    spark = build_session("cdc_backfill_verify", master=master, lake=[state_dir])
    out = []
    try:
        for coll in collections:
            source = read_source(sa_engine, coll, ranges)

            def state(s: SourceSide = source, c: str = coll) -> dict[int, RangeStats]:
                return _state_stats(spark, landing, state_dir, c, s, signal_table)

            table = source.table
            report = compare(coll, [k.name for k in table.key], source.ranges, source.stats, state())
            caught_up = refresh is not None
            done = 0
            while done < rounds and (todo := pending(report, first=done == 0)):
                done += 1
                log.info("%s: re-check %d of %d of ranges %s", coll, done, rounds, todo)
                before = read_stats(sa_engine, source)
                if refresh is not None and caught_up:
                    try:
                        refresh()
                    except CaptureError as exc:
                        log.warning("the landing could not be brought up to now: %s", exc)
                        caught_up = False
                report = recheck(report, todo, before, state(), read_stats(sa_engine, source))
            extra = {
                **report.extra,
                "not_at_position": not_exact,
                "state_as_of": "the landed stream" if landing is not None else "its last reconcile",
                "rechecks": done,
            }
            if done and not caught_up:
                extra["not_caught_up"] = (
                    "verify could not bring the landing up to now: a range may only be behind"
                )
            out.append(AtPosition(source, replace(report, extra=extra)))
    finally:
        if existing is None:
            spark.stop()
    return out
