"""DataWorks-style whole-database sync records (Kafka JSON).

Shape: ``{"schema": {"dataColumn": [{name, type}], "primaryKey", "source": {dbName, tableName}},
"payload": {"before": {"dataColumn": {...}}, "after": {...}, "sequenceId", "timestamp", "op"}}``.

An update comes either as two records sharing one ``sequenceId`` (``UPDATE_BEFOR``, spelled so, then
``UPDATE_AFTER``) or as one ``UPDATE_AFTER`` record carrying both images. The before-half is a removal
(``d``) of the old key at ``(sequenceId, 0)``, and the after-half at ``(sequenceId, 1)`` writes the new
one, so an update that changes the key leaves nothing of the old key; a one-record update that keeps
its key is one update.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from typing import Any

from cdc_backfill.events import positions as pos
from cdc_backfill.events.model import ChangeEvent, ParseError
from cdc_backfill.names import collection_name

ROW_ID = "#alibaba_rds_row_id#"  # the hidden row id of a table without a primary key
FORMAT = "dataworks"
ROW_OPS = ("INSERT", "UPDATE_BEFOR", "UPDATE_AFTER", "DELETE")
# Records that change no row: heartbeats, transaction and XA markers, GTIDs, and schema changes (the
# rows after a schema change carry its columns). Each is a marker: it lands no row.
MARKER_OPS = frozenset(
    {"MHEARTBEAT", "TRANSACTION_BEGIN", "TRANSACTION_END", "GTID", "XACOMMIT", "XAROLLBACK"}
)
SCHEMA_CHANGE = "schema_change"  # the key of a schema change's record in a run's summary
DDL_OPS = frozenset({"CREATE", "ALTER", "DROP", "RENAME", "ERASE", "QUERY", "CINDEX", "DINDEX", "DDL"})
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def is_dataworks(record: Any) -> bool:
    if not isinstance(record, dict):
        return False
    payload, schema = record.get("payload"), record.get("schema")
    return (
        isinstance(payload, dict)
        and isinstance(schema, dict)
        and "sequenceId" in payload
        # a row's record describes its columns; a schema change or a marker may name only its table
        and ("dataColumn" in schema or "primaryKey" in schema or isinstance(schema.get("source"), dict))
    )


def _convert(value: Any, ctype: str, column: str) -> Any:
    if value is None:
        return None
    t = ctype.upper()
    try:
        if t == "STRING":
            if not isinstance(value, str):
                raise TypeError
            return value
        if t == "LONG":
            if isinstance(value, bool):
                raise TypeError
            if isinstance(value, int):
                return value
            if isinstance(value, str) and value.lstrip("-").isdigit():
                return int(value)
            raise TypeError
        if t == "DOUBLE":
            if isinstance(value, bool):
                raise TypeError
            return float(value)
        if t == "BOOLEAN":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
            raise TypeError
        if t == "DATE":  # 13-digit milliseconds since the epoch
            ms = int(value) if isinstance(value, int | str) and not isinstance(value, bool) else None
            if ms is None:
                raise TypeError
            return _EPOCH + dt.timedelta(milliseconds=ms)
        if t == "BYTES":
            if not isinstance(value, str):
                raise TypeError
            return base64.b64decode(value, validate=True)
    except (TypeError, ValueError, binascii.Error):
        raise ParseError(f"column {column}: {value!r} is not a valid {t}") from None
    return value  # a type this reader does not know: kept as written


def _row(image: Any, types: dict[str, str], name: str) -> dict[str, Any] | None:
    if image is None:
        return None
    if not isinstance(image, dict) or not isinstance(image.get("dataColumn"), dict):
        raise ParseError(f"payload.{name} has no dataColumn object")
    return {col: _convert(v, types.get(col, "STRING"), col) for col, v in image["dataColumn"].items()}


def _key_columns(schema: dict[str, Any], types: dict[str, str]) -> list[str]:
    pk = schema.get("primaryKey")
    if isinstance(pk, str) and pk:
        return [c.strip() for c in pk.split(",")]
    if isinstance(pk, list) and pk:
        return [c if isinstance(c, str) else c.get("name") for c in pk]
    if ROW_ID in types:
        return [ROW_ID]
    # Oracle's source: its ROWID pseudo-column, as the sync names it, identifies the row
    rowid = [c for c in types if c.lower() == "rowid"]
    if rowid:
        return rowid[:1]
    raise ParseError(
        "no primary key and no hidden row id column (#alibaba_rds_row_id#, or Oracle's rowid): "
        "the row cannot be identified"
    )


def _key(row: dict[str, Any], columns: list[str], image: str) -> dict[str, Any]:
    missing = [c for c in columns if c not in row]
    if missing:
        raise ParseError(f"key column(s) {missing} not in the {image} image")
    return {c: row[c] for c in columns}


def parse_dataworks(record: dict[str, Any], *, collection: str | None = None) -> list[ChangeEvent]:
    """The events of one DataWorks record: zero or one for most, two for a key-changing update."""
    payload, schema = record.get("payload"), record.get("schema")
    if not isinstance(payload, dict) or not isinstance(schema, dict):
        raise ParseError("not a DataWorks record: payload and schema must be objects")
    op = payload.get("op")
    ts = _event_time(payload)
    if op in MARKER_OPS or op in DDL_OPS or (op is None and payload.get("ddl")):
        seq = payload.get("sequenceId")
        position = (pos.as_int(seq, "sequenceId"), pos.DATAWORKS_OTHER) if seq is not None else ()
        change = None
        if op not in MARKER_OPS:  # a schema change: kept with its text for the run's summary
            src = schema.get("source") or {}
            table = (
                collection_name(src["dbName"], src["tableName"])
                if src.get("dbName") and src.get("tableName")
                else collection
            )
            change = {
                SCHEMA_CHANGE: op or "DDL",
                "collection": table,
                "ddl": payload.get("ddl"),
                "sequenceId": str(seq),
            }
        return [ChangeEvent(None, "h", None, None, None, position, ts, format=FORMAT, message=change)]
    seq = pos.as_int(payload.get("sequenceId"), "sequenceId")
    if op == "TRUNCATE":  # the table emptied at its place: every row before it goes
        coll = _collection(schema, collection)
        return [ChangeEvent(coll, "t", None, None, None, (seq, pos.DATAWORKS_OTHER), ts, format=FORMAT)]
    if op not in ROW_OPS:
        raise ParseError(f"unknown op {op!r}")
    types = _column_types(schema)
    coll = _collection(schema, collection)
    key_cols = _key_columns(schema, types)
    before = _row(payload.get("before"), types, "before")
    after = _row(payload.get("after"), types, "after")
    return _row_events(op, coll, key_cols, seq, before, after, ts)


def _event_time(payload: dict[str, Any]) -> int | None:
    """``timestamp.eventTime`` when it is an integer (informational: anything else is dropped)."""
    ts_info = payload.get("timestamp") or {}
    ts = ts_info.get("eventTime") if isinstance(ts_info, dict) else None
    return ts if isinstance(ts, int) and not isinstance(ts, bool) else None


def _column_types(schema: dict[str, Any]) -> dict[str, str]:
    """Each column's type as ``schema.dataColumn`` declares it (STRING when it does not say)."""
    columns = schema.get("dataColumn")
    if not isinstance(columns, list):
        raise ParseError("schema.dataColumn is not a list of columns")
    return {c["name"]: str(c.get("type", "STRING")) for c in columns if isinstance(c, dict) and "name" in c}


def _collection(schema: dict[str, Any], collection: str | None) -> str:
    """The record's own ``dbName.tableName``, else the collection given for the file."""
    src = schema.get("source") or {}
    coll = (
        collection_name(src["dbName"], src["tableName"])
        if src.get("dbName") and src.get("tableName")
        else collection
    )
    if not coll:
        raise ParseError("no collection: schema.source has no dbName/tableName")
    return coll


def _row_events(
    op: str,
    coll: str,
    key_cols: list[str],
    seq: int,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    ts: int | None,
) -> list[ChangeEvent]:
    """The events of a row change: a before-half at ``(seq, 0)``, an after-half or a whole change at
    ``(seq, 1)`` (module docstring)."""
    first, second = (seq, pos.DATAWORKS_BEFORE_HALF), (seq, pos.DATAWORKS_OTHER)
    if op == "INSERT":
        if after is None:
            raise ParseError("INSERT without an after image")
        return [
            ChangeEvent(coll, "c", _key(after, key_cols, "after"), None, after, second, ts, format=FORMAT)
        ]
    if op == "DELETE":
        if before is None:
            raise ParseError("DELETE without a before image")
        return [
            ChangeEvent(coll, "d", _key(before, key_cols, "before"), before, None, second, ts, format=FORMAT)
        ]
    if op == "UPDATE_BEFOR":
        if before is None:
            raise ParseError("UPDATE_BEFOR without a before image")
        return [
            ChangeEvent(coll, "d", _key(before, key_cols, "before"), before, None, first, ts, format=FORMAT)
        ]
    # UPDATE_AFTER: the after-half of a pair, or a whole update in one record
    if after is None:
        raise ParseError("UPDATE_AFTER without an after image")
    new_key = _key(after, key_cols, "after")
    events = []
    if before is not None:
        old_key = _key(before, key_cols, "before")
        if old_key != new_key:  # a key change: the old key leaves first
            events.append(ChangeEvent(coll, "d", old_key, before, None, first, ts, format=FORMAT))
    events.append(ChangeEvent(coll, "u", new_key, before, after, second, ts, format=FORMAT))
    return events


# The format's column types as the typed log keeps them (PostgreSQL names, as every description uses).
PG_TYPES = {
    "STRING": "text",
    "LONG": "bigint",
    "DOUBLE": "double precision",
    "BOOLEAN": "boolean",
    "DATE": "timestamp with time zone",  # milliseconds since the epoch, read as UTC
    "BYTES": "bytea",
}


def dataworks_columns(record: Any) -> tuple[list[tuple[str, str]], list[str]] | None:
    """What a DataWorks record says of its table: ``([(column, PostgreSQL type)], key)`` from its
    ``schema.dataColumn`` and ``schema.primaryKey`` (the hidden ``#alibaba_rds_row_id#`` for a table
    without one); None when the record does not say (pure). Types it does not know are kept as text."""
    if not is_dataworks(record):
        return None
    schema = record.get("schema") or {}
    columns = schema.get("dataColumn")
    if not isinstance(columns, list) or not columns:
        return None
    typed = [
        (c["name"], PG_TYPES.get(str(c.get("type", "STRING")).upper(), "text"))
        for c in columns
        if isinstance(c, dict) and isinstance(c.get("name"), str)
    ]
    try:
        key = _key_columns(schema, {name: t for name, t in typed})
    except ParseError:
        return None
    if not key or any(k not in {n for n, _ in typed} for k in key):
        return None
    return typed, key
