"""Verify (docs/design.md §1 step 4): compare a collection's reconciled state with the live source, range by
range, and re-snapshot only the ranges that differ.

Pure modules (no Airflow, no Spark, no I/O): :mod:`.forms` (the canonical text of every value and the
order of every key column, one rule for both sides), :mod:`.sql` (PostgreSQL statements as strings),
:mod:`.ranges` (key ranges, the repair signal), :mod:`.compare` (results and the report). The only module
here that talks to the database is :mod:`.source`; the Spark side is ``cdc_backfill.verify.spark.range_stats``.

A repair is a READ snapshot of the differing ranges: their rows are read again, and a key of the state
that the source no longer has is removed when that snapshot finishes (its condition is on the key only:
phantom removal, docs/design.md §6 rule 7). What verify cannot repair, by construction:

- a difference in columns (a column added or dropped in the source, not yet in the state): every row
  differs and re-reading rows does not change the state's schema;
- ranges that differ because the state is behind the source (the stream not drained or not reconciled
  yet): verify compares the state as of its position with the source as of now; run it after a drain and
  a reconcile, or expect the ranges that recent changes touched.
"""

from __future__ import annotations


class VerifyError(RuntimeError):
    """A collection cannot be verified (no such table, no key, no state, columns that differ); the
    message says why."""
