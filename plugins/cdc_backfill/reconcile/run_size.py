"""How many rows a reconcile run reads, known before its Spark job starts (roll manifests, the state's
Delta log, READ chunk footers: no Spark), and whether the run is small enough for the driver JVM's
first compiler only.

A driver JVM that lives for seconds spends CPU in the JIT's second compiler (C2) that it does not earn
back before it exits. Measured on 2 cores, whole ``cdc-backfill reconcile`` processes (``local[2]``,
``bench.reconcile``'s landings, two runs each, the first compiler only against both): 1M events 7.9 s
against 10.3 s; 2M 10.7-11.1 s against 13.0-14.5 s; 4M 14.5-15.0 s against 15.3-16.4 s; 10M 30.0-31.5 s
against 25.4-26.2 s. So runs up to :data:`SMALL_RUN_ROWS` start their driver with the first compiler only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

from cdc_backfill.reconcile.runs import chunk_footers, landed_log_files, plan_run
from cdc_backfill.state.table import StateError, current_version

log = logging.getLogger(__name__)

SMALL_RUN_ROWS = 3_000_000  # stream events, previous state rows and READ rows, all collections together
_FOOTERS_AT_ONCE = 64  # READ chunk footers read before the count is looked at again


def run_rows(
    landing: Path, state: Path, collections: Iterable[str], limit: int = SMALL_RUN_ROWS
) -> int | None:
    """The rows a reconcile of ``collections`` reads: the events of the roll manifests the least
    advanced collection has not read (a manifest counts every collection's), each collection's previous
    state rows and its READ rows not judged yet. Counting stops once over ``limit`` (a big snapshot's
    chunk footers are not all read for this). None when not known without Spark: a state in the
    earlier format, a state file whose rows its Delta log does not record."""
    events = others = 0
    for coll in collections:
        try:
            previous = current_version(state, coll)
        except StateError:
            return None
        run = plan_run(landing, coll, previous)
        events = max(events, landed_log_files(landing, run.meta.position).unread(run.meta).events)
        if previous is not None:
            if len(previous.file_rows) != len(previous.files) or None in previous.file_rows:
                return None
            others += sum(r for r in previous.file_rows if r is not None)
        for at in range(0, len(run.chunks), _FOOTERS_AT_ONCE):
            if events + others > limit:
                break
            others += sum(chunk_footers(run.chunks[at : at + _FOOTERS_AT_ONCE]).rows.values())
        if events + others > limit:
            break
    return events + others


def small_run(rows: int | None) -> bool:
    """Whether a run of ``rows`` (:func:`run_rows`; None: not known) starts its driver with the JVM's
    first compiler only."""
    return rows is not None and rows <= SMALL_RUN_ROWS


def first_compiler_only(landing: Path, state: Path, collections: Iterable[str], ingest: bool = False) -> bool:
    """Whether a reconcile of ``collections`` starts its driver with the JIT's first compiler only (the
    CLI's and the Airflow task's one decision). Not for a job that ingests JSON first (``ingest``):
    its events are not counted before it. A count that fails gives the default compilers: only the
    compiler depends on it, and the job meets the cause and reports it."""
    if ingest:
        return False
    try:
        rows = run_rows(landing, state, collections)
    except Exception as exc:
        log.warning("the run's size could not be counted (%s): the driver JVM keeps both compilers", exc)
        return False
    small = small_run(rows)
    log.info(
        "the run reads %s rows: the driver JVM runs %s",
        "an unknown number of" if rows is None else f"{rows:,}",
        "the JIT's first compiler only" if small else "both compilers",
    )
    return small
