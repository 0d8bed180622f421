"""Signals: the rows of Debezium's three-column signal table, and the JSON in their ``data`` column.

Pure Python. A signal read back from the table is understood exactly as one built here: both go
through :meth:`Signal.from_row` / :meth:`Signal.data_json`.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

EXECUTE = "execute-snapshot"
STOP = "stop-snapshot"
PAUSE = "pause-snapshot"
RESUME = "resume-snapshot"
LOG = "log"
WINDOW_OPEN = "snapshot-window-open"
WINDOW_CLOSE = "snapshot-window-close"
# the native engine's rows around one collection of a snapshot (signals.marks, docs/design.md §6 rule 7)
SNAPSHOT_START = "snapshot-collection-start"
SNAPSHOT_DONE = "snapshot-collection-done"
SNAPSHOT_ENDED = "snapshot-collection-ended"  # stopped or failed before it finished: no done row will come
# a window's watermarks are the rows <chunk-id>-open and <chunk-id>-close (Debezium's ids too)
OPEN_SUFFIX = "-open"
CLOSE_SUFFIX = "-close"

OPERATOR_TYPES = (EXECUTE, STOP, PAUSE, RESUME, LOG)
ENGINE_TYPES = (WINDOW_OPEN, WINDOW_CLOSE, SNAPSHOT_START, SNAPSHOT_DONE, SNAPSHOT_ENDED)
SIGNAL_TYPES = OPERATOR_TYPES + ENGINE_TYPES

ID_MAX = 42  # id VARCHAR(42)
TYPE_MAX = 32  # type VARCHAR(32)
DATA_MAX = 2048  # data VARCHAR(2048)
SNAPSHOT_TYPES = ("incremental",)


def open_id(chunk_id: str) -> str:
    """The id of a chunk's low watermark row."""
    return chunk_id + OPEN_SUFFIX


def close_id(chunk_id: str) -> str:
    """The id of a chunk's high watermark row."""
    return chunk_id + CLOSE_SUFFIX


def chunk_of(watermark_id: str) -> str:
    """The chunk id a watermark row's id names: the one rule every reader of windows uses (pure)."""
    for suffix in (OPEN_SUFFIX, CLOSE_SUFFIX):
        if watermark_id.endswith(suffix):
            return watermark_id.removesuffix(suffix)
    return watermark_id


# chunk_of as a regular expression, for readers that run it elsewhere (Spark, picking a pending
# window's signal rows for the carry): the suffix it removes
WATERMARK_SUFFIX_PATTERN = f"({re.escape(OPEN_SUFFIX)}|{re.escape(CLOSE_SUFFIX)})$"


# Keys of the data JSON. Debezium reads the first group and ignores keys it does not know, which is
# where the project's extensions go.
K_COLLECTIONS = "data-collections"
K_TYPE = "type"
K_CONDITIONS = "additional-conditions"
K_CONDITION = "additional-condition"
K_SURROGATE = "surrogate-key"
K_CHUNK = "chunk-size"
K_MESSAGE = "message"
KNOWN_KEYS = {K_COLLECTIONS, K_TYPE, K_CONDITIONS, K_CONDITION, K_SURROGATE, K_CHUNK}  # the rest: ``extra``


class SignalError(ValueError):
    """A signal that is refused; the message says exactly what is wrong and how to fix it."""


@dataclass(frozen=True)
class AdditionalCondition:
    collection: str  # a regex naming the collection(s) the filter applies to
    filter: str


@dataclass(frozen=True)
class Signal:
    id: str
    type: str
    collections: tuple[str, ...] = ()
    snapshot_type: str | None = None
    conditions: tuple[AdditionalCondition, ...] = ()
    condition: str | None = None  # the older single additional-condition, for every collection
    surrogate_key: str | None = None
    chunk_size: int | None = None
    message: str | None = None  # for log signals
    extra: dict[str, Any] = field(default_factory=dict, compare=False)  # keys we do not know, kept

    # ------------------------------------------------------------ to the table

    def data_dict(self) -> dict[str, Any] | None:
        if self.type == LOG:
            return {K_MESSAGE: self.message or ""}
        if self.type in ENGINE_TYPES:
            return None
        data: dict[str, Any] = {}
        if self.type in (EXECUTE, STOP) and (self.collections or self.type == EXECUTE):
            data[K_COLLECTIONS] = list(self.collections)
        data[K_TYPE] = self.snapshot_type or "incremental"
        if self.conditions:
            data[K_CONDITIONS] = [
                {"data-collection": c.collection, "filter": c.filter} for c in self.conditions
            ]
        if self.condition is not None:
            data[K_CONDITION] = self.condition
        if self.surrogate_key is not None:
            data[K_SURROGATE] = self.surrogate_key
        if self.chunk_size is not None:
            data[K_CHUNK] = self.chunk_size
        data.update(self.extra)
        return data

    def data_json(self) -> str | None:
        data = self.data_dict()
        return None if data is None else json.dumps(data, separators=(", ", ": "))

    def row(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "data": self.data_json()}

    # ------------------------------------------------------------ from the table

    @classmethod
    def from_row(cls, id: str, type: str, data: str | None) -> Signal:
        """Read a signal-table row; refuse it (SignalError) when its shape is wrong."""
        if type not in SIGNAL_TYPES:
            raise SignalError(f"unknown signal type {type!r}: one of {', '.join(SIGNAL_TYPES)}")
        if type in ENGINE_TYPES:
            return cls(id, type)
        parsed = _data_object(data)
        if type == LOG:
            return cls(id, type, message=_log_message(parsed))
        # checked in this order: the first problem found is the one reported
        collections = _collections(parsed)
        snapshot_type = _snapshot_type(type, parsed)
        conditions = _conditions(parsed)
        condition = _optional_text(parsed, K_CONDITION, "a string of SQL")
        surrogate = _optional_text(parsed, K_SURROGATE, "a column name")
        return cls(
            id,
            type,
            collections=collections,
            snapshot_type=snapshot_type,
            conditions=conditions,
            condition=condition or None,
            surrogate_key=surrogate or None,
            chunk_size=_chunk_size(parsed),
            extra={k: v for k, v in parsed.items() if k not in KNOWN_KEYS},
        )


def _data_object(data: str | None) -> dict[str, Any]:
    """The ``data`` column as a JSON object; none at all reads as an empty one."""
    try:
        parsed = json.loads(data) if data not in (None, "") else {}
    except ValueError as exc:
        raise SignalError(f"data is not valid JSON ({exc.msg} at character {exc.pos}): {data!r}") from None
    if not isinstance(parsed, dict):
        raise SignalError(f"data must be a JSON object, not {parsed!r}")
    return parsed


def _log_message(parsed: dict[str, Any]) -> str:
    message = parsed.get(K_MESSAGE)
    if not isinstance(message, str):
        raise SignalError('a log signal needs data {"message": "<text>"}')
    return message


def _collections(parsed: dict[str, Any]) -> tuple[str, ...]:
    collections = parsed.get(K_COLLECTIONS, [])
    if isinstance(collections, str):  # Debezium accepts one name as a plain string too
        collections = [collections]
    if not isinstance(collections, list) or not all(isinstance(c, str) for c in collections):
        raise SignalError(f"{K_COLLECTIONS} must be a list of regular expressions, not {collections!r}")
    return tuple(collections)


def _snapshot_type(type: str, parsed: dict[str, Any]) -> str | None:
    """The snapshot type, lower-cased; an execute or a stop signal must name one."""
    snapshot_type = parsed.get(K_TYPE)
    if type in (EXECUTE, STOP) and snapshot_type is None:
        raise SignalError(f'{type} needs "type": "incremental" in its data')
    if snapshot_type is not None and not isinstance(snapshot_type, str):
        raise SignalError(f"type must be a string, not {snapshot_type!r}")
    return snapshot_type.lower() if isinstance(snapshot_type, str) else None


def _is_condition(c: Any) -> bool:
    """One of ``additional-conditions``: {"data-collection": <regex>, "filter": <SQL>}."""
    return (
        isinstance(c, dict) and isinstance(c.get("data-collection"), str) and isinstance(c.get("filter"), str)
    )


def _conditions(parsed: dict[str, Any]) -> tuple[AdditionalCondition, ...]:
    conditions = parsed.get(K_CONDITIONS, [])
    if not isinstance(conditions, list):
        raise SignalError(f'{K_CONDITIONS} must be a list of {{"data-collection", "filter"}} objects')
    for c in conditions:
        if not _is_condition(c):
            raise SignalError(f'each of {K_CONDITIONS} needs "data-collection" and "filter" strings: {c!r}')
    return tuple(AdditionalCondition(c["data-collection"], c["filter"]) for c in conditions)


def _optional_text(parsed: dict[str, Any], key: str, what: str) -> str | None:
    value = parsed.get(key)
    if value is not None and not isinstance(value, str):
        raise SignalError(f"{key} must be {what}, not {value!r}")
    return value


def _chunk_size(parsed: dict[str, Any]) -> int | None:
    chunk = parsed.get(K_CHUNK)
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int)):
        raise SignalError(f"{K_CHUNK} must be a whole number, not {chunk!r}")
    return chunk


def new_signal_id(now: dt.datetime | None = None) -> str:
    """A unique, sortable id that fits VARCHAR(42): ``sig-20261122T231500-3f9a1c2b``."""
    now = now or dt.datetime.now(dt.UTC)
    return f"sig-{now:%Y%m%dT%H%M%S}-{secrets.token_hex(4)}"


def check_row_limits(signal: Signal) -> None:
    """The three columns' sizes: a row that would not fit is refused before it reaches the database."""
    if not signal.id or len(signal.id) > ID_MAX:
        raise SignalError(f"id must be 1 to {ID_MAX} characters, not {len(signal.id)}: {signal.id!r}")
    data = signal.data_json()
    if data is not None and len(data) > DATA_MAX:
        raise SignalError(
            f"data is {len(data)} characters, more than the signal table's {DATA_MAX}: "
            "use fewer or broader collection patterns, or a shorter condition"
        )


def conditions_from_json(text: str) -> tuple[AdditionalCondition, ...]:
    """Debezium's ``additional-conditions`` list as JSON text, e.g. from ``--conditions``."""
    try:
        raw = json.loads(text)
    except ValueError as exc:
        raise SignalError(f"--conditions is not valid JSON: {exc}") from None
    if not isinstance(raw, list) or not all(_is_condition(c) for c in raw):
        raise SignalError('--conditions must be a JSON list of {"data-collection": ..., "filter": ...}')
    return tuple(AdditionalCondition(c["data-collection"], c["filter"]) for c in raw)


def execute_snapshot(
    signal_id: str,
    collections: Sequence[str],
    *,
    condition: str | None = None,
    conditions: Sequence[AdditionalCondition] = (),
    surrogate_key: str | None = None,
    chunk_size: int | None = None,
) -> Signal:
    """The one builder of an execute-snapshot signal (an incremental snapshot: Debezium's JSON, the chunk
    size as a project extension), for the CLI, the form, the repair, the reread and the demo."""
    return Signal(
        signal_id, EXECUTE, tuple(collections), "incremental", conditions=tuple(conditions),
        condition=condition, surrogate_key=surrogate_key, chunk_size=chunk_size,
    )  # fmt: skip


def stop_snapshot(signal_id: str, collections: Sequence[str] = ()) -> Signal:
    """A stop-snapshot; no collections stops every running snapshot."""
    return Signal(signal_id, STOP, tuple(collections), "incremental")
