"""The canonical change event that every input format is parsed into (docs/design.md §5).

Pure Python: no Spark, no Airflow. Values inside ``key``/``before``/``after`` are plain JSON values,
or, where a format names a semantic type, exact Python values (``Decimal``, ``date``, ``time``,
``datetime``, ``bytes``); :func:`to_jsonable` turns them back into JSON for output.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import orjson

# op codes: c create, u update, d delete, r READ (snapshot), t truncate, m logical-decoding message,
# h heartbeat or other non-row event (DDL, transaction markers).
OPS = frozenset("cudrtmh")
ROW_OPS = frozenset("cudr")

# Debezium's placeholder for a TOASTed column that an update did not change (PostgreSQL).
UNAVAILABLE = "__debezium_unavailable_value"


class ParseError(ValueError):
    """A record that cannot be read as a change event; the message is the quarantine reason."""


# Not frozen: a frozen dataclass pays object.__setattr__ per field, a fifth of the parse cost here.
@dataclass(slots=True)
class ChangeEvent:
    """One change, as every part of the project sees it.

    ``position`` sorts events of one collection in commit order: compare the tuples element by
    element. An event whose ``after`` is None removes its key at its position (a delete, or the
    before-half of a DataWorks update whose after-half follows at a greater position).
    """

    collection: str | None
    op: str
    key: dict[str, Any] | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    position: tuple[int, ...]
    source_ts_ms: int | None = None
    unchanged: tuple[str, ...] = ()
    format: str = ""
    snapshot: str | None = None  # "incremental", "true", "last"... as the source wrote it
    message: dict[str, Any] | None = field(default=None, compare=False)  # op m: prefix and content

    @property
    def is_row(self) -> bool:
        return self.op in ROW_OPS

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``cdc-backfill events parse``."""
        out: dict[str, Any] = {
            "collection": self.collection,
            "op": self.op,
            "key": to_jsonable(self.key),
            "before": to_jsonable(self.before),
            "after": to_jsonable(self.after),
            "unchanged": list(self.unchanged),
            "position": list(self.position),
            "source_ts_ms": self.source_ts_ms,
        }
        if self.snapshot is not None:
            out["snapshot"] = self.snapshot
        if self.message is not None:
            out["message"] = to_jsonable(self.message)
        return out


@dataclass(frozen=True, slots=True)
class Quarantined:
    """A record that could not be parsed: kept with its reason and where it came from, never dropped."""

    reason: str
    file: str | None
    line: int | None
    record: str  # the raw text, cut to a readable length

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "file": self.file, "line": self.line, "record": self.record}


def to_jsonable(value: Any) -> Any:
    """Exact values to JSON: Decimal as a string (no float rounding), bytes as base64, times as ISO-8601."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    raise TypeError(f"no JSON form for {type(value).__name__}")


def _orjson_default(value: Any) -> Any:
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"no JSON form for {type(value).__name__}")


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes in the form of :func:`to_jsonable` (orjson writes datetimes as ISO-8601 too).

    Integers beyond 64 bits (80-bit SQL Server LSNs) take the slow path.
    """
    try:
        return orjson.dumps(obj, default=_orjson_default)
    except TypeError:
        return json.dumps(to_jsonable(obj), separators=(",", ":"), ensure_ascii=False).encode()
