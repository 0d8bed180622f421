"""How many rows a reconcile run reads, known before its Spark job starts (roll manifests, the state's
Delta log, READ chunk footers: no Spark), and whether the run is small enough for the driver JVM's
first compiler only.

A driver JVM that lives for seconds spends CPU in the JIT's second compiler (C2) that it does not earn
back before it exits: runs up to :data:`SMALL_RUN_ROWS` start their driver with the first compiler only,
where whole processes were measured faster that way (docs/benchmarks.md, "Measured choices").

An ingest's work is its JSON, counted in bytes: an ingest of at most :data:`SMALL_INGEST_BYTES` does the
same, and so does a reconcile that ingests that much first and is small with its events.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from cdc_backfill.landing.columns import landed_collections
from cdc_backfill.landing.stream import bytes_to_ingest
from cdc_backfill.reconcile.runs import chunk_footers, landed_log_files, plan_run
from cdc_backfill.state.table import StateError, current_version

log = logging.getLogger(__name__)

SMALL_RUN_ROWS = 3_000_000  # stream events, previous state rows and READ rows, all collections together
SMALL_INGEST_BYTES = 128 << 20  # JSON files to ingest
JSON_EVENT_BYTES = 200  # fewer than any Debezium JSON event has (its source block alone): bytes to events
_FOOTERS_AT_ONCE = 64  # READ chunk footers read before the count is looked at again


def rows_to_read(
    landing: Path, state: Path, collections: Iterable[str], limit: int = SMALL_RUN_ROWS
) -> int | None:
    """The rows a reconcile of ``collections`` reads: the events of the roll manifests the least
    advanced collection has not read (a manifest counts every collection's), each collection's previous
    state rows and its READ rows not judged yet. Counting stops once over ``limit`` (a big snapshot's
    chunk footers are not all read for this). None when not known without Spark: a state this release
    does not read, a state file whose rows its Delta log does not record."""
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
    """Whether a run of ``rows`` (:func:`rows_to_read`; None: not known) starts its driver with the JVM's
    first compiler only."""
    return rows is not None and rows <= SMALL_RUN_ROWS


def first_compiler_only(
    landing: Path, state: Path, collections: Iterable[str], signal_table: str, ingest: bool = False
) -> bool:
    """Whether a reconcile of ``collections`` (none: every one landed) starts its driver with the JIT's
    first compiler only (the CLI's and the Airflow task's one decision). ``ingest``: the job ingests
    the landing's ``stream/`` first; its JSON counts as at most one event every
    :data:`JSON_EVENT_BYTES`."""

    def judge() -> tuple[bool, str]:
        json_bytes = bytes_to_ingest(landing, None, SMALL_INGEST_BYTES) if ingest else 0
        if json_bytes > SMALL_INGEST_BYTES:
            return False, f"ingests more than {SMALL_INGEST_BYTES:,} bytes of JSON first"
        names = list(collections) or (landed_collections(landing, signal_table) if landing.is_dir() else [])
        rows = rows_to_read(landing, state, names)
        if rows is None:
            return False, "reads an unknown number of rows"
        rows += json_bytes // JSON_EVENT_BYTES
        return small_run(rows), f"reads {rows:,} rows" + (
            " (its JSON counted by its bytes)" if ingest else ""
        )

    return _decide("run", judge)


def first_compiler_only_to_ingest(landing: Path, paths: list[Path] | None) -> bool:
    """Whether ``cdc-backfill ingest`` of ``paths`` (None: the landing's ``stream/``) starts its driver
    with the JIT's first compiler only: at most :data:`SMALL_INGEST_BYTES` of JSON."""

    def judge() -> tuple[bool, str]:
        found = bytes_to_ingest(landing, paths, SMALL_INGEST_BYTES)
        if found > SMALL_INGEST_BYTES:
            return False, f"reads more than {SMALL_INGEST_BYTES:,} bytes of JSON"
        return True, f"reads {found:,} bytes of JSON"

    return _decide("ingest", judge)


def _decide(job: str, judge: Callable[[], tuple[bool, str]]) -> bool:
    """``judge``'s answer, logged. A count that fails gives the default compilers: only the compiler
    depends on it, and the job meets the cause and reports it."""
    try:
        small, why = judge()
    except Exception as exc:
        log.warning("the %s's size could not be counted (%s): the driver JVM keeps both compilers", job, exc)
        return False
    log.info(
        "the %s %s: the driver JVM runs %s",
        job,
        why,
        "the JIT's first compiler only" if small else "both compilers",
    )
    return small
