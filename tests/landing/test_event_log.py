"""The typed event log's schema document and files."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdc_backfill.eventlog.schema import LogSchema, LogSchemaError
from cdc_backfill.events.positions import position_key, position_of_key
from cdc_backfill.landing.event_log import describe, log_files, read_schema, write_events
from cdc_backfill.pgtypes import PgColumn

COLUMNS = (PgColumn("id", "integer", 23), PgColumn("amount", "numeric(12,2)", 1700))


def events(rows: list[tuple[tuple[int, ...], str, int, str | None]]) -> pa.Table:
    return pa.table({
        "_cdc_position": [position_key(p) for p, _, _, _ in rows],
        "_cdc_op": [op for _, op, _, _ in rows],
        "_cdc_ts_ms": [1_700_000_000_000] * len(rows),
        "_cdc_unchanged": [None] * len(rows),
        "_cdc_origin": ["capture"] * len(rows),
        "_cdc_line": list(range(1, len(rows) + 1)),
        "id": [i for _, _, i, _ in rows],
        "amount": [a for _, _, _, a in rows],
    })  # fmt: skip


def test_a_changed_column_starts_a_new_version_and_the_document_keeps_them_all(tmp_path: Path) -> None:
    v1 = describe(tmp_path, "public.orders", COLUMNS, ["id"])
    assert v1.version == 1
    assert describe(tmp_path, "public.orders", COLUMNS, ["id"]) == v1  # described again: same version
    wider = (*COLUMNS, PgColumn("note", "text", 25))
    v2 = describe(tmp_path, "public.orders", wider, ["id"])
    assert v2.version == 2
    retyped = (COLUMNS[0], PgColumn("amount", "numeric(14,2)", 1700))
    assert describe(tmp_path, "public.orders", retyped, ["id"]).version == 3
    doc = read_schema(tmp_path, "public.orders")
    assert doc is not None and [v.version for v in doc.versions] == [1, 2, 3]
    assert doc.to_json()["versions"][0]["columns"][1] == {
        "name": "amount", "type": "numeric(12,2)", "type_oid": 1700, "lake_type": "decimal128(12, 2)"
    }  # fmt: skip
    assert LogSchema.from_json(doc.to_json()) == doc
    with pytest.raises(LogSchemaError, match="key column"):
        describe(tmp_path, "public.orders", COLUMNS, ["order_id"])
    with pytest.raises(LogSchemaError, match="not a log schema document"):
        LogSchema.from_json({"collection": "x"})


def test_a_log_file_holds_its_events_in_position_order_named_by_its_span(tmp_path: Path) -> None:
    version = describe(tmp_path, "public.orders", COLUMNS, ["id"])
    rows = [((2**70, 3), "u", 1, "2.50"), ((5, 1), "c", 1, "1.00"), ((5, 2), "d", 1, None)]
    path = write_events(tmp_path, "public.orders", version, events(rows))
    assert path is not None and path.parent.name == "v0001"
    assert path.name == f"p{position_key((5, 1)).hex()}-{position_key((2**70, 3)).hex()}.parquet"
    table = pq.read_table(path)
    assert [position_of_key(k) for k in table.column("_cdc_position").to_pylist()] == [
        (5, 1),
        (5, 2),
        (2**70, 3),
    ]
    assert table.schema.field("amount").type == pa.decimal128(12, 2)
    assert write_events(tmp_path, "public.orders", version, events([])) is None
    (path.parent / ".left-by-a-crash.parquet.part").write_bytes(b"x")
    assert log_files(tmp_path, "public.orders") == [path]
