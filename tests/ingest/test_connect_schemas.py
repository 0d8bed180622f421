"""Columns and key from the Kafka Connect schemas of a wrapped Debezium record."""

from __future__ import annotations

import json

import pytest

from cdc_backfill.ingest.connect_schemas import ConnectSchemaError, columns_from_connect, pg_type_of
from cdc_backfill.pgtypes import PgColumn
from tests.support.paths import FIXTURES


def test_the_documented_wrapped_record_gives_its_columns_and_key() -> None:
    event = json.loads((FIXTURES / "debezium_postgres_customers_with_schema.json").read_text())["events"][0]
    columns, key = columns_from_connect(event["value"]["schema"], event["key"]["schema"])
    assert columns == [PgColumn("id", "integer", 0), PgColumn("first_name", "text", 0),
                       PgColumn("last_name", "text", 0), PgColumn("email", "text", 0)]  # fmt: skip
    assert key == ["id"]


@pytest.mark.parametrize(
    ("field", "want"),
    [
        ({"type": "int16"}, "smallint"),
        ({"type": "int64", "name": "io.debezium.time.MicroTimestamp"}, "timestamp without time zone"),
        ({"type": "string", "name": "io.debezium.time.ZonedTimestamp"}, "timestamp with time zone"),
        ({"type": "int32", "name": "io.debezium.time.Date"}, "date"),
        ({"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
          "parameters": {"scale": "2", "connect.decimal.precision": "12"}}, "numeric(12,2)"),
        ({"type": "struct", "name": "io.debezium.data.VariableScaleDecimal"}, "numeric"),
        ({"type": "array", "items": {"type": "string"}}, "text[]"),
        ({"type": "string", "name": "io.debezium.data.Json"}, "json"),
        ({"type": "bytes"}, "bytea"),
        # the connector propagated the source's type: it wins
        ({"type": "string", "parameters": {"__debezium.source.column.type": "VARCHAR"}}, "character varying"),
        ({"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
          "parameters": {"scale": "2", "__debezium.source.column.type": "NUMERIC",
                         "__debezium.source.column.length": "10", "__debezium.source.column.scale": "2"}},
         "numeric(10,2)"),
        # a source type this project does not know (SQL Server's NVARCHAR): the Connect type
        ({"type": "string", "parameters": {"__debezium.source.column.type": "NVARCHAR"}}, "text"),
    ],
)  # fmt: skip
def test_connect_fields_map_to_postgresql_type_names(field: dict, want: str) -> None:  # type: ignore[type-arg]
    assert pg_type_of({"field": "c", **field}) == want


def test_schemas_that_cannot_type_a_collection() -> None:
    envelope = {"type": "struct", "fields": [{"field": "after", "type": "struct", "name": "x.Value",
                                              "fields": [{"field": "id", "type": "int32"}]}]}  # fmt: skip
    assert columns_from_connect(envelope, None) is None  # no key schema: the key comes from elsewhere
    assert columns_from_connect({"type": "struct", "fields": []}, {"type": "struct", "fields": []}) is None
    with pytest.raises(ConnectSchemaError, match=r"key schema's fields \['code'\]"):
        columns_from_connect(envelope, {"type": "struct", "fields": [{"field": "code", "type": "string"}]})
    with pytest.raises(ConnectSchemaError, match="unknown Connect type 'decimal128'"):
        pg_type_of({"field": "c", "type": "decimal128"})


def test_a_wrapped_line_gives_its_description_and_anything_else_none() -> None:
    from cdc_backfill.ingest.connect_schemas import described_from_json, wrapped_columns

    event = json.loads((FIXTURES / "debezium_postgres_customers_with_schema.json").read_text())["events"][0]
    text = wrapped_columns(json.dumps(event).encode())
    assert text is not None
    columns, key = described_from_json(text)
    assert [c.name for c in columns] == ["id", "first_name", "last_name", "email"] and key == ["id"]
    assert wrapped_columns(json.dumps(event["value"]["payload"]).encode()) is None  # no wrapper
    assert wrapped_columns(json.dumps({"value": event["value"]}).encode()) is None  # no key schema
    assert wrapped_columns(b"{not json") is None
