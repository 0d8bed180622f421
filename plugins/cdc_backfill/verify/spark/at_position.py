"""Verify at one position while writers run (PostgreSQL): the source and the state compared as of the
same position P, so that a range differs only when the state is wrong.

1. A snapshot of the source is exported at P (``pg.exported``); every collection's ranges are counted
   and hashed inside it, however long that takes.
2. ``catch_up(P)`` makes the landing zone hold the stream past P (a drain, or a wait for the capture
   that follows the slot).
3. The state advanced to P: the current version plus the log's events before P (and the READ chunks
   whose windows closed before P), computed as a reconcile would and hashed, never written: verify
   leaves the state as it found it.

The state must not be past P already (a reconcile that ran after step 1 started): that is refused.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdc_backfill.eventlog.schema import POSITION
from cdc_backfill.landing.columns import collection_columns
from cdc_backfill.reconcile.runs import RunInput, landed_log_files, plan_run
from cdc_backfill.reconcile.spark.job import landed_rows, unread_rows
from cdc_backfill.reconcile.spark.runs import read_run, reconcile_run
from cdc_backfill.spark.positions import key_literal
from cdc_backfill.verify import VerifyError
from cdc_backfill.verify.recheck import ROUNDS
from cdc_backfill.verify.spark.range_stats import compare_frame, current_state, no_state_reason

if TYPE_CHECKING:
    import sqlalchemy as sa

    from cdc_backfill.verify.compare import Report
    from cdc_backfill.verify.source_side import SourceSide

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AtPosition:
    source: SourceSide
    report: Report


def before(position: int) -> object:
    """Log rows of transactions that committed before P: those the exported snapshot sees."""
    return F.col(POSITION) < key_literal((position,))


def state_at(
    spark: SparkSession,
    landing: Path,
    state_dir: Path,
    collection: str,
    position: int | None,
    signal_table: str,
) -> DataFrame:
    """The collection's state advanced to P (None: over everything landed)."""
    previous = current_state(state_dir, collection)
    if previous is None:
        raise VerifyError(no_state_reason(state_dir, collection))
    run = plan_run(landing, collection, previous)
    if position is None:
        return _advanced(spark, landing, run, collection, signal_table, None)
    if run.meta.position is not None and run.meta.position >= (position,):
        raise VerifyError(
            f"{collection}: the state is past the position verify read the source at (a reconcile ran "
            "meanwhile): verify again"
        )
    return _advanced(spark, landing, run, collection, signal_table, position)


def _advanced(
    spark: SparkSession,
    landing: Path,
    run: RunInput,
    collection: str,
    signal_table: str,
    position: int | None,
) -> DataFrame:
    columns, key = collection_columns(landing, collection)
    landed = landed_log_files(landing, run.meta.position)
    rows, signals = landed_rows(spark, landing, run, columns, key, signal_table, landed.files)
    # the manifests the state has not read: only they can hold late events (the others are in it)
    fresh = unread_rows(spark, landing, run, columns, key, signal_table, landed)
    frames = read_run(spark, run, columns, key)
    if position is not None:
        rows, signals = rows.where(before(position)), signals.where(before(position))
        if fresh is not None:
            fresh = (fresh[0].where(before(position)), fresh[1].where(before(position)))
    result = reconcile_run(run, rows, signals, frames, columns, key, fresh=fresh)
    return result.state


def verify_at_position(
    url: str,
    sa_engine: sa.Engine,
    landing: Path,
    state_dir: Path,
    collections: Sequence[str],
    ranges: int,
    catch_up: Callable[[int], None],
    signal_table: str,
    master: str = "local[*]",
) -> list[AtPosition]:
    """Each collection's report, the source and the state both as of one exported position."""
    from cdc_backfill.pg.exported import exported_snapshot
    from cdc_backfill.spark.session import build_session
    from cdc_backfill.verify.source_side import read_source

    for coll in collections:  # before the source is read: a typo is named at once
        if current_state(state_dir, coll) is None:
            raise VerifyError(no_state_reason(state_dir, coll))
    with exported_snapshot(url) as snapshot:
        log.info("reading the source as of %s", snapshot.lsn)
        sources = {c: read_source(sa_engine, c, ranges, snapshot) for c in collections}
    catch_up(snapshot.position)
    existing = SparkSession.getActiveSession()
    spark = build_session("cdc_backfill_verify", master=master, lake=[state_dir])
    out = []
    try:
        for coll in collections:
            state = state_at(spark, landing, state_dir, coll, snapshot.position, signal_table)
            report = compare_frame(state, sources[coll])
            report = replace(report, extra={**report.extra, "position": snapshot.lsn})
            out.append(AtPosition(sources[coll], report))
    finally:
        if existing is None:
            spark.stop()
    return out


def verify_collections(
    url: str,
    sa_engine: sa.Engine,
    state_dir: Path,
    collections: Sequence[str],
    ranges: int,
    *,
    landing: Path | None,
    catch_up: Callable[[int], None] | None,
    refresh: Callable[[], None] | None = None,
    not_exact: str | None = None,
    signal_table: str,
    master: str = "local[*]",
    rechecks: int = ROUNDS,
) -> list[AtPosition]:
    """What the CLI, the DAG's verify task and the repair call: at one position when there is a way to
    make the landing pass it (``catch_up``); else the source read now against the state advanced over
    the landed stream, the differing ranges re-checked after ``refresh`` brings the landing up to now
    (``verify.spark.now``), each report saying why it is not at one position (``not_at_position``).
    """
    from cdc_backfill.pg.exported import ExportError
    from cdc_backfill.verify.spark.now import verify_now

    if catch_up is not None and landing is not None:
        try:
            return verify_at_position(
                url, sa_engine, landing, state_dir, collections, ranges, catch_up, signal_table, master
            )
        except ExportError as exc:
            not_exact = str(exc)
    return verify_now(
        sa_engine, landing, state_dir, collections, ranges, refresh=refresh,
        not_exact=not_exact or "no landing zone to read the stream from", signal_table=signal_table,
        master=master, rounds=rechecks,
    )  # fmt: skip
