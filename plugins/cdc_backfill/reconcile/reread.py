"""Rows the stream never sent a value for (``_cdc_unknown``: a key change of a row whose TOASTed column
was unchanged, when the old key's value was never known) are re-read: execute-snapshot signals whose
``additional-condition`` names exactly those keys. The reconcile's Airflow task sends them; the CLI
offers them (``cdc-backfill signal reread``). After the snapshot and the next reconcile the state is
complete: a READ of the key carries every column.

:func:`reread_signals` is pure; :func:`incomplete_keys` reads a state version's key columns (pyarrow,
no Spark).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from cdc_backfill.signals.model import DATA_MAX, AdditionalCondition, Signal, execute_snapshot, new_signal_id
from cdc_backfill.state.table import UNKNOWN, StateError, current_version


class RereadError(ValueError):
    """The keys cannot be written as a condition; the message says why."""


def incomplete_keys(state: Path, collection: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The key columns of the collection's current state and the keys whose rows miss a value
    (``_cdc_unknown``); no current version: no keys."""
    try:
        current = current_version(state, collection)
    except StateError as exc:
        raise RereadError(str(exc)) from None
    if current is None:
        return [], []
    key = current.meta.get("key")
    if not key:
        raise RereadError(
            f"the state of {collection} was written before it named its key: reconcile once more, then re-read"
        )
    rows = current.dataset().to_table(columns=[*key, UNKNOWN]).to_pylist()
    keys = [tuple(r[k] for k in key) for r in rows if r[UNKNOWN]]
    try:
        return key, sorted(keys)
    except TypeError:  # a NULL in a key column: any stable order will do
        return key, sorted(keys, key=repr)


def sql_literal(value: Any) -> str:
    """A key value as a SQL literal PostgreSQL compares with the column (an untyped string literal
    takes the column's type)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, str | dt.date | dt.datetime):
        text = value.isoformat(sep=" ") if isinstance(value, dt.datetime) else str(value)
        return "'" + text.replace("'", "''") + "'"
    raise RereadError(f"a key of type {type(value).__name__} cannot be written as a condition")


def _ident(name: str) -> str:
    return name if re.fullmatch(r"[a-z_][a-z0-9_]*", name) else '"' + name.replace('"', '""') + '"'


def _condition(key: Sequence[str], keys: Sequence[tuple[Any, ...]]) -> str:
    if len(key) == 1:
        return f"{_ident(key[0])} IN ({', '.join(sql_literal(k[0]) for k in keys)})"
    return " OR ".join(
        "(" + " AND ".join(f"{_ident(c)} = {sql_literal(v)}" for c, v in zip(key, k, strict=True)) + ")"
        for k in keys
    )


def reread_filter(signal: Signal) -> str | None:
    """The key condition a re-read signal carries (pure)."""
    return signal.conditions[0].filter if signal.conditions else signal.condition


def reread_signals(collection: str, key: Sequence[str], keys: Sequence[tuple[Any, ...]]) -> list[Signal]:
    """Execute-snapshot signals of ``collection`` whose conditions name exactly ``keys``, as few as the
    signal table's data column allows."""
    out: list[Signal] = []
    batch: list[tuple[Any, ...]] = []

    def signal(of: Sequence[tuple[Any, ...]]) -> Signal:
        pattern = re.escape(collection)
        # Debezium's additional-conditions (one per collection): Debezium 3 no longer reads the single
        # additional-condition and would re-read the whole table; this project's engine reads both
        cond = AdditionalCondition(collection, _condition(key, of))
        return execute_snapshot(new_signal_id(), (pattern,), conditions=(cond,))

    for k in keys:
        trial = signal([*batch, k])
        if len(trial.data_json() or "") <= DATA_MAX:
            batch.append(k)
            continue
        if not batch:
            raise RereadError(f"the key {k!r} of {collection} is too long for one signal")
        out.append(signal(batch))
        batch = [k]
    if batch:
        out.append(signal(batch))
    return out


@dataclass(frozen=True)
class Reread:
    """One collection's rows that miss a value the stream never sent (``missing``) and the
    execute-snapshot signals that re-read exactly them (none when the collection is complete)."""

    collection: str
    missing: int
    signals: list[Signal]


def plan_rereads(state: Path, collections: Sequence[str]) -> list[Reread]:
    """What ``cdc-backfill signal reread`` and the DAG's reread task send, per collection of the state
    (the one loop both run). Raises RereadError for a collection the state cannot tell about."""
    out = []
    for coll in collections:
        key, keys = incomplete_keys(state, coll)
        out.append(Reread(coll, len(keys), reread_signals(coll, key, keys) if keys else []))
    return out
