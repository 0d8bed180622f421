"""A collection's columns and key from the Kafka Connect schemas a record's ``{schema, payload}``
wrapper carries (pure): the value schema's ``after`` (or ``before``) struct gives the columns, the key
schema the key. Types map to PostgreSQL type names, from which the lake types follow as on every path.

The column's own source type wins where the connector propagated it (``column.propagate.source.type``:
the ``__debezium.source.column.type`` parameter) and it is a type name this project knows; else the
semantic name (``io.debezium.time.MicroTimestamp``...), else the Connect type.

``ingest`` reads the first wrapped record of each collection in each file (``wrapped_columns``, in the
parse's workers); what it gives wins over every other source of types, so that a column the source
added reaches the log as a new schema version.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from cdc_backfill.events.dataworks import dataworks_columns
from cdc_backfill.events.debezium import record_schemas, with_schemas
from cdc_backfill.events.model import ParseError
from cdc_backfill.ingest.column_sources import Described, pg_type_name
from cdc_backfill.pgtypes import PgColumn

_SEMANTIC = {
    "io.debezium.time.Date": "date",
    "org.apache.kafka.connect.data.Date": "date",
    "io.debezium.time.Time": "time without time zone",
    "io.debezium.time.MicroTime": "time without time zone",
    "io.debezium.time.NanoTime": "time without time zone",
    "org.apache.kafka.connect.data.Time": "time without time zone",
    "io.debezium.time.Timestamp": "timestamp(3) without time zone",
    "org.apache.kafka.connect.data.Timestamp": "timestamp(3) without time zone",
    "io.debezium.time.MicroTimestamp": "timestamp without time zone",
    "io.debezium.time.NanoTimestamp": "timestamp without time zone",
    "io.debezium.time.ZonedTimestamp": "timestamp with time zone",
    "io.debezium.time.ZonedTime": "time with time zone",
    "io.debezium.data.VariableScaleDecimal": "numeric",
    "io.debezium.data.Json": "json",
    "io.debezium.data.Uuid": "uuid",
    "io.debezium.data.Xml": "xml",
    "io.debezium.data.Enum": "text",
    "io.debezium.data.EnumSet": "text",
}
_CONNECT = {
    "int8": "smallint",
    "int16": "smallint",
    "int32": "integer",
    "int64": "bigint",
    "float32": "real",
    "float64": "double precision",
    "boolean": "boolean",
    "string": "text",
    "bytes": "bytea",
}
SOURCE_TYPE = "__debezium.source.column.type"
SOURCE_LENGTH = "__debezium.source.column.length"
SOURCE_SCALE = "__debezium.source.column.scale"


class ConnectSchemaError(ValueError):
    """A wrapper whose schema cannot type its collection: the message says which field and why."""


def pg_type_of(field: dict[str, Any]) -> str:
    """The PostgreSQL type name of one Connect field."""
    params = field.get("parameters") or {}
    source = params.get(SOURCE_TYPE)
    if isinstance(source, str):
        spelled = source.lower()
        if spelled in ("numeric", "decimal") and SOURCE_LENGTH in params and SOURCE_SCALE in params:
            spelled = f"numeric({params[SOURCE_LENGTH]},{params[SOURCE_SCALE]})"
        known = pg_type_name(spelled)
        if known is not None:
            return known
    name = field.get("name")
    if name == "org.apache.kafka.connect.data.Decimal":
        precision = params.get("connect.decimal.precision")
        scale = params.get("scale")
        return f"numeric({precision},{scale})" if precision is not None and scale is not None else "numeric"
    if name in _SEMANTIC:
        return _SEMANTIC[name]
    kind = field.get("type")
    if kind == "array":
        items = field.get("items")
        if not isinstance(items, dict):
            raise ConnectSchemaError(f"array field {field.get('field')!r} has no item schema")
        return pg_type_of(items) + "[]"
    if kind in ("map", "struct"):
        return "json"
    if kind in _CONNECT:
        return _CONNECT[kind]
    raise ConnectSchemaError(f"field {field.get('field')!r} has an unknown Connect type {kind!r}")


def row_struct(value_schema: dict[str, Any]) -> dict[str, Any] | None:
    """The envelope's ``after`` struct (``before`` when only it is there); None without either."""
    fields = {f.get("field"): f for f in value_schema.get("fields", []) if isinstance(f, dict)}
    for part in ("after", "before"):
        if isinstance(fields.get(part), dict) and fields[part].get("type") == "struct":
            return fields[part]
    return None


def columns_from_connect(value_schema: dict[str, Any], key_schema: dict[str, Any] | None) -> Described | None:
    """(columns, key) the schemas give; None when they do not give both (no row struct, no key struct)."""
    row = row_struct(value_schema)
    if row is None or not isinstance(key_schema, dict) or key_schema.get("type") != "struct":
        return None
    columns = [PgColumn(f["field"], pg_type_of(f), 0) for f in row.get("fields", [])]
    key = [f["field"] for f in key_schema.get("fields", [])]
    names = {c.name for c in columns}
    if not key or any(k not in names for k in key):
        raise ConnectSchemaError(f"the key schema's fields {key} are not all columns of {row.get('name')}")
    return columns, key


def described_json(described: Described) -> str:
    """(columns, key) as the JSON text the parse's workers hand to the driver."""
    columns, key = described
    return json.dumps({"columns": [{"name": c.name, "type": c.type} for c in columns], "key": list(key)})


def described_from_json(text: str) -> Described:
    doc = json.loads(text)
    return [PgColumn(c["name"], c["type"], 0) for c in doc["columns"]], list(doc["key"])


def wrapped_columns(line: bytes, schemas: Mapping[str, Any] | None = None) -> str | None:
    """What a record's wrappers say about its collection (``described_json``), or None: no wrapper, no
    key schema, or schemas this module cannot read (the collection is then typed from elsewhere).
    ``schemas``: those its file's schema line defined, for a record naming its schemas by id."""
    try:
        record = with_schemas(orjson.loads(line), schemas or {})
        told = dataworks_columns(record)  # DataWorks records carry their columns' types and key too
        if told is not None:
            return described_json(([PgColumn(n, t, 0) for n, t in told[0]], told[1]))
        key_schema, value_schema = record_schemas(record)
        if value_schema is None:
            return None
        described = columns_from_connect(value_schema, key_schema)
    except (orjson.JSONDecodeError, ConnectSchemaError, ParseError, KeyError, TypeError, AttributeError):
        return None
    return described_json(described) if described is not None else None
