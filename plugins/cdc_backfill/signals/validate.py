"""Checking a signal against the source's catalog: before it is written, and again before the engine acts.

Refusals are per signal (bad JSON shape, no collections, a bad pattern) or per collection (a condition
or surrogate key that does not fit one table). The sender refuses a signal with any error; the engine
runs the collections that are valid and reports the others, so one bad table blocks nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from cdc_backfill.signals.model import (
    ENGINE_TYPES,
    EXECUTE,
    K_CHUNK,
    SNAPSHOT_TYPES,
    STOP,
    Signal,
    SignalError,
)
from cdc_backfill.signals.source_tables import Catalog, TableInfo
from cdc_backfill.signals.statuses import SignalStatus

CHUNK_MIN = 1
CHUNK_MAX = 1_000_000
DEFAULT_CHUNK_SIZE = 4096


@dataclass(frozen=True)
class CollectionPlan:
    """What the engine needs to snapshot one collection of an accepted signal."""

    collection: str
    key: tuple[str, ...]  # the primary key, or the surrogate key
    condition: str | None
    chunk_size: int
    columns: tuple[str, ...]
    adaptive: bool = False  # the signal named no chunk size: the engine grows chunks that read fast


@dataclass(frozen=True)
class ValidatedSignal:
    signal: Signal
    plans: tuple[CollectionPlan, ...] = ()
    errors: dict[str, str] = field(default_factory=dict)  # collection -> reason

    @property
    def collections(self) -> tuple[str, ...]:
        return tuple(p.collection for p in self.plans)

    def raise_if_any_error(self) -> None:
        if self.errors:
            raise SignalError("; ".join(self.errors.values()))


def _plan(
    table: TableInfo, signal: Signal, condition: str | None, dialect: str, chunk_size: int
) -> CollectionPlan:
    """One collection's plan: its key, its checked condition, and its chunk size (``chunk_size``, grown
    by the engine when the signal named none)."""
    coll = table.collection
    if signal.surrogate_key is not None:
        if signal.surrogate_key not in table.columns:
            raise SignalError(
                f"surrogate-key {signal.surrogate_key!r} is not a column of {coll}; columns: {', '.join(table.columns)}"
            )
        _check_surrogate(table, signal.surrogate_key)
        key: tuple[str, ...] = (signal.surrogate_key,)
    elif table.primary_key:
        key = table.primary_key
    else:
        raise SignalError(f"{coll} has no primary key: give a surrogate-key (a unique, non-null column)")
    checked = None
    if condition is not None:
        # sqlglot is loaded only for a signal with a condition: importing it took a tenth of a second
        # of every command's start
        from cdc_backfill.signals.conditions import check_condition

        checked = check_condition(condition, dialect, table.columns, coll)
    return CollectionPlan(coll, key, checked, chunk_size, table.columns, adaptive=signal.chunk_size is None)


def _check_surrogate(table: TableInfo, column: str) -> None:
    """A surrogate key orders the chunks, so it must be unique; without a primary key it also identifies
    the rows, so it must be NOT NULL (checked where the catalog was read from the source)."""
    coll = table.collection
    if table.unique_columns is not None and column not in table.unique_columns:
        fit = ", ".join(c for c in table.unique_columns if table.primary_key or c not in table.nullable)
        raise SignalError(
            f"surrogate-key {column!r} of {coll} has no unique index (its chunks would read rows twice or "
            f"not at all): give a column with a unique index of its own; {coll} has "
            + (f"these: {fit}" if fit else "none")
        )
    if not table.primary_key and column in table.nullable:
        raise SignalError(
            f"surrogate-key {column!r} of {coll} may be NULL, and {coll} has no primary key: the surrogate "
            "identifies its rows, so it must be NOT NULL"
        )


def validate(signal: Signal, catalog: Catalog, protected: tuple[str, ...] = ()) -> ValidatedSignal:
    """Resolve and check a signal. Signal-level problems raise SignalError; per-collection ones are listed.

    ``protected`` names collections that are never snapshotted (the signal and status tables).
    """
    if signal.type in ENGINE_TYPES:
        raise SignalError(f"{signal.type} signals are written by the snapshot engine, not by people")
    if signal.type not in (EXECUTE, STOP):
        return ValidatedSignal(signal)
    if signal.snapshot_type is not None and signal.snapshot_type not in SNAPSHOT_TYPES:
        raise SignalError(f'snapshot type {signal.snapshot_type!r} is not supported: use "incremental"')
    if signal.type == STOP:
        # A stop names running snapshots; its patterns must still make sense, or it silently stops nothing.
        for pattern in signal.collections:
            catalog.match_or_refuse(pattern)
        return ValidatedSignal(signal)

    if not signal.collections:
        raise SignalError(
            "data-collections is empty: name at least one table pattern (for example public.orders)"
        )
    chunk = signal.chunk_size if signal.chunk_size is not None else DEFAULT_CHUNK_SIZE
    if not CHUNK_MIN <= chunk <= CHUNK_MAX:
        raise SignalError(f"{K_CHUNK} must be between {CHUNK_MIN} and {CHUNK_MAX:,}, not {chunk}")
    resolved: list[str] = []
    for pattern in signal.collections:
        for coll in catalog.match_or_refuse(pattern):
            if coll in protected:
                raise SignalError(f"{pattern!r} matches {coll}, the project's own signal bookkeeping table")
            if coll not in resolved:  # a collection named twice is read once
                resolved.append(coll)
    per_collection: dict[str, str] = {}
    for cond in signal.conditions:
        hits = [c for c in catalog.match(cond.collection) if c in resolved]
        if not hits:
            raise SignalError(
                f"additional-conditions names {cond.collection!r}, which matches none of the collections "
                f"of this signal ({', '.join(resolved)})"
            )
        for c in hits:
            if c in per_collection:
                raise SignalError(f"two additional-conditions apply to {c}: give one filter per collection")
            per_collection[c] = cond.filter
    tables = catalog.by_name()
    plans: list[CollectionPlan] = []
    errors: dict[str, str] = {}
    for coll in resolved:
        condition = per_collection.get(coll, signal.condition)
        try:
            plans.append(_plan(tables[coll], signal, condition, catalog.dialect, chunk))
        except SignalError as exc:
            errors[coll] = str(exc)
    return ValidatedSignal(signal, tuple(plans), errors)


@dataclass(frozen=True)
class Verdict:
    """The review of a signal nobody had looked at yet: what its status row records, and what the review
    returns for it (the signal resolved, or why it is refused)."""

    status: str
    type: str
    reason: str | None
    collections: list[str] | None  # the resolved collections of an accepted signal
    outcome: ValidatedSignal | SignalError


def review(
    parsed: Signal | SignalError, catalog: Callable[[], Catalog], protected: tuple[str, ...] = ()
) -> Verdict:
    """Accept or reject a signal read back from the table. An execute signal with some invalid
    collections is accepted for the others (the reason names the rest); with none valid, rejected.
    ``catalog`` is asked only when a signal parsed, so the source is read only when needed."""
    if isinstance(parsed, SignalError):
        return Verdict(SignalStatus.REJECTED, "?", str(parsed), None, parsed)
    tables = catalog()
    try:
        validated = validate(parsed, tables, protected)
    except SignalError as exc:
        return Verdict(SignalStatus.REJECTED, parsed.type, str(exc), None, exc)
    reason = "; ".join(validated.errors.values())
    if parsed.type == EXECUTE and not validated.plans:
        return Verdict(SignalStatus.REJECTED, parsed.type, reason, None, SignalError(reason))
    return Verdict(SignalStatus.ACCEPTED, parsed.type, reason or None, list(validated.collections), validated)
