"""Debezium change events (PostgreSQL, SQL Server, Oracle, MySQL connectors) as JSON.

Accepted shapes: the value alone, or ``{"key": ..., "value": ...}``; each with or without the JSON
converter's ``{"schema", "payload"}`` wrapper. This project's own PostgreSQL capture writes the same
shape with ``source.commit_lsn`` added.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from cdc_backfill.events import positions as pos
from cdc_backfill.events.model import ROW_OPS, UNAVAILABLE, ChangeEvent, ParseError
from cdc_backfill.events.semantic import decode_row, envelope_field, struct_decoders
from cdc_backfill.names import collection_name

DEBEZIUM_OPS = frozenset("cudrtm")
# The TOAST placeholder as Debezium writes it for text, arrays and bytea (base64 of the same text).
_UNAVAILABLE_B64 = "X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="
_UNAVAILABLE_LIST = [UNAVAILABLE]
_UNAVAILABLE_FORMS = (UNAVAILABLE, _UNAVAILABLE_LIST, _UNAVAILABLE_B64)

# A record with neither a Kafka key nor key columns known for its collection: ``ingest`` parses again
# once it has found the key (the source's catalog), so it reads the collection back from the reason.
MISSING_KEY = "missing key for {}: no Kafka key and no key columns known for it"
MISSING_KEY_PREFIX = MISSING_KEY.split("{}")[0]  # what every such reason starts with
_MISSING_KEY_RE = re.compile("^" + re.escape(MISSING_KEY).replace(r"\{\}", "(.+)") + "$")


def missing_key_collection(reason: str) -> str | None:
    """The collection a quarantine reason says had no key; None for any other reason."""
    m = _MISSING_KEY_RE.match(reason)
    return m.group(1) if m else None


def wrapped(part: Any) -> bool:
    """Whether a part is written by the JSON converter with schemas on: ``{schema, payload}``."""
    return isinstance(part, dict) and "payload" in part and "schema" in part and len(part) == 2


def unwrap(part: Any) -> tuple[dict[str, Any] | None, Any]:
    """(schema, payload) of a part written by the JSON converter with schemas on; (None, part) without."""
    if wrapped(part):
        return part["schema"], part["payload"]
    return None, part


def schema_line(record: Any) -> dict[str, Any] | None:
    """The schemas a batch file's schema line defines, by id; None for any other record (pure).
    ``capture debezium`` writes one first in each file and names them in its records' ``key_schema``
    and ``value_schema``, rather than repeating them in every record's wrapper."""
    if isinstance(record, dict) and len(record) == 1 and isinstance(record.get("schemas"), dict):
        return record["schemas"]
    return None


def follows(record: Any) -> dict[str, Any] | None:
    """The record a batch file's ``follows`` line carries: the last record of the file before it,
    which ``capture debezium`` repeats when it may be a key change's delete, so that a create starting
    this file pairs with it (pure; None for any other record). It is no event of this file."""
    if isinstance(record, dict) and len(record) == 1 and isinstance(record.get("follows"), dict):
        return record["follows"]
    return None


def with_schemas(record: Any, schemas: Mapping[str, Any]) -> Any:
    """A record naming its key's and value's schemas by id, as the converter writes it with them:
    each part in its ``{schema, payload}`` wrapper (pure; any other record as it is)."""
    if not isinstance(record, dict) or ("value_schema" not in record and "key_schema" not in record):
        return record
    out = dict(record)
    for part in ("key", "value"):
        sid = out.pop(f"{part}_schema", None)
        if sid is None or out.get(part) is None:
            continue
        if not isinstance(sid, str) or sid not in schemas:
            raise ParseError(f"{part}_schema {sid!r} is not defined by a schema line before it in its file")
        out[part] = {"schema": schemas[sid], "payload": out[part]}
    return out


def split_record(record: dict[str, Any]) -> tuple[Any, Any, bool]:
    """(key part, value part, has key part) of a record that is a key/value pair or a value alone."""
    # A change value always has "op" (or is wrapped as schema/payload); a pair has "value" beside "key".
    if "value" in record and "op" not in record and "payload" not in record:
        return record.get("key"), record["value"], "key" in record
    return None, record, False


def record_schemas(record: Any) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(key schema, value schema) a record's ``{schema, payload}`` wrappers carry; None for a part
    written without one."""
    if not isinstance(record, dict):
        return None, None
    key_part, value_part, _ = split_record(record)
    return unwrap(key_part)[0], unwrap(value_part)[0]


def delivery_offset(record: dict[str, Any]) -> tuple[int, ...] | None:
    """A Kafka (partition, offset) that a sink kept beside key and value: the delivery order."""
    if "offset" in record and "value" in record:
        partition = record.get("partition", 0)
        return (pos.as_int(partition, "partition"), pos.as_int(record["offset"], "offset"))
    return None


def _connector(source: Mapping[str, Any]) -> str:
    name = source.get("connector")
    if isinstance(name, str) and name:
        return name.lower()
    # Documentation examples sometimes leave the connector out: tell by the position fields.
    if "commit_lsn" in source and isinstance(source.get("commit_lsn"), str) and ":" in source["commit_lsn"]:
        return "sqlserver"
    if "scn" in source or "commit_scn" in source:
        return "oracle"
    if "lsn" in source or "sequence" in source:
        return "postgresql"
    if "file" in source and "pos" in source:
        return "mysql"
    return "unknown"


def _collection(source: Mapping[str, Any], connector: str, hint: str | None) -> str | None:
    schema, table, db = source.get("schema"), source.get("table"), source.get("db")
    if connector == "mysql" and db and table:
        return collection_name(db, table)
    if schema and table:
        return collection_name(schema, table)
    return hint


def _position(
    source: Mapping[str, Any],
    connector: str,
    offset: tuple[int, ...] | None,
    order: pos.PgStream | None = None,
) -> tuple[int, ...]:
    if connector == "postgresql":
        if source.get("commit_lsn") is not None:  # this project's capture: exact commit order
            return (pos.pg_lsn(source["commit_lsn"], "commit_lsn"), pos.pg_lsn(source.get("lsn"), "lsn"))
        if offset is not None:  # the order the stream delivered the event
            return offset
        seq = pos.debezium_pg_sequence(source.get("sequence"))
        if seq is not None:
            if order is not None:
                return order.place(seq[0], seq[1], source.get("txId"))
            return (0 if seq[0] is None else seq[0], seq[1])  # no stream to place it in
        if source.get("lsn") is not None:
            # No sequence (older connectors, abbreviated examples): placed as if it committed at its own
            # LSN, which is exact for one-change transactions.
            lsn = pos.pg_lsn(source["lsn"])
            return (lsn, lsn)
        return ()
    if connector == "sqlserver":
        commit = source.get("commit_lsn")
        if commit is None:
            return offset or ()
        change = source.get("change_lsn")
        serial = source.get("event_serial_no")
        return (
            pos.sqlserver_lsn(commit, "commit_lsn"),
            0 if change is None else pos.sqlserver_lsn(change, "change_lsn"),
            0 if serial is None else pos.as_int(serial, "event_serial_no"),
        )
    if connector == "oracle":
        scn = source.get("scn")
        commit = source.get("commit_scn")
        if scn is None and commit is None:
            return offset or ()
        scn_i = pos.as_int(scn if scn is not None else commit, "scn")
        return (pos.as_int(commit, "commit_scn") if commit is not None else scn_i, scn_i)
    if connector == "mysql":
        binlog = source.get("file")
        if isinstance(binlog, str) and "." in binlog and source.get("pos") is not None:
            index = pos.as_int(binlog.rsplit(".", 1)[1], "binlog file index")
            return (index, pos.as_int(source["pos"], "pos"), pos.as_int(source.get("row") or 0, "row"))
        return offset or ()
    return offset or ()


def _toast(after: dict[str, Any] | None) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """Columns carrying the unavailable-value placeholder leave ``after`` and are listed as unchanged."""
    if not _has_placeholder(after):
        return after, ()
    unchanged = tuple(k for k, v in after.items() if any(v == form for form in _UNAVAILABLE_FORMS))
    return {k: v for k, v in after.items() if k not in unchanged}, unchanged


def _has_placeholder(row: dict[str, Any] | None) -> bool:
    """Whether a row holds the unavailable-value placeholder in any of its forms."""
    if not row:
        return False
    values = row.values()
    # `in` over the values compares in C: the common case (no placeholder) costs three scans.
    return UNAVAILABLE in values or _UNAVAILABLE_B64 in values or _UNAVAILABLE_LIST in values


def _snapshot(source: Mapping[str, Any]) -> str | None:
    """``source.snapshot`` as text in lower case ("true", "incremental", "last"...), None without one."""
    snapshot = source.get("snapshot")
    return None if snapshot is None else str(snapshot).lower()


def _ts(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return pos.as_int(value, "ts_ms")
    except ParseError:
        return None  # a timestamp is informational: a bad one does not lose the event


def _key_from_row(row: dict[str, Any] | None, columns: Sequence[str]) -> dict[str, Any] | None:
    if row is None:
        return None
    missing = [c for c in columns if c not in row]
    if missing:
        raise ParseError(f"key column(s) {missing} not in the row")
    return {c: row[c] for c in columns}


def parse_debezium(
    record: dict[str, Any],
    *,
    collection: str | None = None,
    key_columns: Mapping[str, Sequence[str]] | None = None,
    offset: tuple[int, ...] | None = None,
    order: pos.PgStream | None = None,
    key_change: int | None = None,
) -> list[ChangeEvent]:
    """The events of one Debezium record: none for a tombstone, one otherwise.

    ``collection`` names the table when the record does not (the topic a sink read it from);
    ``key_columns`` gives a collection's key for records landed without their Kafka key;
    ``offset`` is the delivery order (PostgreSQL events are ordered by it when given); ``order`` places
    PostgreSQL events without offsets along the stream the record came in (one per file).
    ``key_change``: the half of a key change (0, 1) the record's Kafka headers name: it pairs across
    partitions.
    """
    key_part, value_part, has_key = split_record(record)
    offset = delivery_offset(record) or offset
    key_schema, key_payload = unwrap(key_part)
    value_schema, value = unwrap(value_part)
    if value is None:
        return []  # tombstone: carries no change (log compaction's delete marker)
    if not isinstance(value, dict):
        raise ParseError(f"value is not an object: {type(value).__name__}")
    marker = _marker(value)
    if marker is not None:
        return marker
    op = value.get("op")
    if op not in DEBEZIUM_OPS:
        raise ParseError(f"unknown op {op!r}")
    source = value.get("source")
    if not isinstance(source, dict):
        source = {}
    connector = _connector(source)
    fmt = f"debezium-{connector}"
    position = _position(source, connector, offset, order)
    ts = _source_ts(source, value)
    snapshot_s = _snapshot(source)

    if op == "m":
        message = value.get("message")
        return [ChangeEvent(None, "m", None, None, None, position, ts, format=fmt, message=message)]

    coll = _collection(source, connector, collection)
    if not coll:
        raise ParseError("no collection: source has no schema/table and none was given for the file")
    if op == "t":
        return [ChangeEvent(coll, "t", None, None, None, position, ts, format=fmt, snapshot=snapshot_s)]

    before, after, unchanged = _rows(value, value_schema, op, key_payload)
    row = after if after is not None else before
    key = _event_key(coll, has_key, key_schema, key_payload, key_columns, row)
    if connector == "postgresql" and op in "dc":
        where = (coll, source.get("lsn"), source.get("txId"))
        paired = key_change is not None and position
        position = (*position, key_change) if paired else (order or pos.PgStream()).pair(op, where, position)
    return [
        ChangeEvent(coll, op, key, before, after, position, ts, unchanged, format=fmt, snapshot=snapshot_s)
    ]


def plain_postgres(record: dict[str, Any], order: pos.PgStream | None) -> list[ChangeEvent] | None:
    """The event of the record nearly every PostgreSQL landing holds, read with the fewest steps; None
    for any other record, which :func:`parse_debezium` reads (the same event, by every rule below).
    ``events.parse.parse_lines`` asks it first, before telling schema lines, ``follows`` lines and
    DataWorks' records apart: none of those is this record.

    That record: a Kafka key and value pair without ``{schema, payload}`` wrappers; a row change of the
    ``postgresql`` connector whose position is whole in it (this project's capture: integer
    ``commit_lsn`` and ``lsn``; a sink's: integer ``partition`` and ``offset``); a named table;
    ``before``/``after`` objects as its op needs them; no unavailable-value placeholder. Every
    step runs once per event, so this short path is worth its place (docs/benchmarks.md, "Measured
    choices")."""
    value = record.get("value")
    if type(value) is not dict or "op" in record or "payload" in record:
        return None
    if "key_schema" in record or "value_schema" in record:  # schemas named by id: with_schemas
        return None
    key, source, op = record.get("key"), value.get("source"), value.get("op")
    if type(key) is not dict or type(source) is not dict or op not in ROW_OPS:
        return None
    if source.get("connector") != "postgresql" or wrapped(key):
        return None
    commit, lsn = source.get("commit_lsn"), source.get("lsn")
    if type(commit) is int and commit >= 0:
        if type(lsn) is not int or lsn < 0:
            return None
        position: tuple[int, ...] = (commit, lsn)
    elif commit is None and "offset" in record:  # delivery_offset: a sink's record
        part, off = record.get("partition", 0), record["offset"]
        if type(part) is not int or part < 0 or type(off) is not int or off < 0:
            return None
        position = (part, off)
    else:
        return None
    schema, table = source.get("schema"), source.get("table")
    if type(schema) is not str or type(table) is not str or not schema or not table:
        return None
    before, after = value.get("before"), value.get("after")
    if (before is not None and type(before) is not dict) or (after is not None and type(after) is not dict):
        return None
    if (after is None and op != "d") or _has_placeholder(after):
        return None
    ts = source.get("ts_ms")
    if type(ts) is not int or ts < 0:
        ts = _source_ts(source, value)
    coll = collection_name(schema, table)
    if op in "dc":
        position = (order or pos.PgStream()).pair(op, (coll, lsn, source.get("txId")), position)
    fmt = "debezium-postgresql"
    return [
        ChangeEvent(
            coll, op, dict(key), before, after, position, ts, (), format=fmt, snapshot=_snapshot(source)
        )
    ]


def _marker(value: dict[str, Any]) -> list[ChangeEvent] | None:
    """``h`` for a value that is no row change (transaction, schema change, notification, heartbeat)."""
    if "status" in value and "id" in value and "op" not in value:
        return [ChangeEvent(None, "h", None, None, None, (), None, format="debezium")]  # transaction marker
    if "op" not in value and "aggregate_type" in value and "type" in value:
        # a notification a sink landed beside the changes (the wait reads it: capture.debezium.batch_files)
        return [ChangeEvent(None, "h", None, None, None, (), None, format="debezium")]
    # a schema change, or a heartbeat (``heartbeat.interval.ms``: its value holds only ``ts_ms``)
    if "op" not in value and ("ddl" in value or "tableChanges" in value or set(value) == {"ts_ms"}):
        return [ChangeEvent(None, "h", None, None, None, (), _ts(value.get("ts_ms")), format="debezium")]
    return None


def _source_ts(source: Mapping[str, Any], value: dict[str, Any]) -> int | None:
    """When the change happened in the source; else when the connector read it."""
    ts = _ts(source.get("ts_ms"))
    if ts is None:
        ts = _ts(value.get("ts_ms"))
    return ts


def _rows(
    value: dict[str, Any], value_schema: dict[str, Any] | None, op: str, key_payload: Any
) -> tuple[dict[str, Any] | None, dict[str, Any] | None, tuple[str, ...]]:
    """(before, after, unchanged columns) of a row change: the rows its op needs checked, decoded by the
    value's schema when it has one, and the unavailable-value placeholders taken out of ``after``."""
    before, after = value.get("before"), value.get("after")
    for name, row in (("before", before), ("after", after)):
        if row is not None and not isinstance(row, dict):
            raise ParseError(f"{name} is not an object: {type(row).__name__}")
    if op in "cur" and after is None:
        raise ParseError(f"op {op} without an after row")
    if op == "d" and before is None and key_payload is None:
        raise ParseError("delete without a before row or a key")
    if value_schema is not None:
        before = decode_row(before, struct_decoders(envelope_field(value_schema, "before")))
        after = decode_row(after, struct_decoders(envelope_field(value_schema, "after")))
    after, unchanged = _toast(after)
    return before, after, unchanged


def _event_key(
    coll: str,
    has_key: bool,
    key_schema: dict[str, Any] | None,
    key_payload: Any,
    key_columns: Mapping[str, Sequence[str]] | None,
    row: dict[str, Any] | None,
) -> dict[str, Any] | None:
    """The record's Kafka key when it kept one, else the collection's key columns read from ``row``;
    with neither, the record waits in quarantine for ``ingest`` to find the key (``MISSING_KEY``)."""
    if has_key and key_payload is not None:
        if not isinstance(key_payload, dict):
            raise ParseError(f"key is not an object: {key_payload!r}")
        return decode_row(key_payload, struct_decoders(key_schema)) if key_schema else dict(key_payload)
    if key_columns and coll in key_columns:
        return _key_from_row(row, key_columns[coll])
    raise ParseError(MISSING_KEY.format(coll))
