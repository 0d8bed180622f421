"""A batch file of ``capture debezium`` defines each Connect schema once, in its first line, and its
records name them by id: read, it gives exactly the events, the columns and the record identities of
the same records each wrapped in its ``{schema, payload}``."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from cdc_backfill.capture.debezium.batch_files import record_identity
from cdc_backfill.capture.debezium.jvm_batch import SCHEMA_RECIPE, schema_header, schema_id, wrapped
from cdc_backfill.events.model import Quarantined
from cdc_backfill.events.parse import parse_lines
from cdc_backfill.ingest.connect_schemas import wrapped_columns

FIXTURE = Path(__file__).parents[1] / "fixtures" / "events" / "debezium_postgres_customers_with_schema.json"


def _wrapped_records() -> list[dict]:
    """Three changes of one table, each wrapped as the converter writes it with schemas on."""
    base = json.loads(FIXTURE.read_text())["events"][0]
    out = []
    for i, op in enumerate(("c", "u", "d"), start=1):
        rec = copy.deepcopy(base)
        value = rec["value"]["payload"]
        value["op"] = op
        value["source"]["lsn"] = 1000 + i
        if op == "d":
            value["before"], value["after"] = value["after"], None
        out.append({"partition": 0, "offset": i, **rec})
    return out


def _dumps(doc: object) -> str:
    return json.dumps(doc, separators=(",", ":"))


def _schema_lines(records: list[dict]) -> list[bytes]:
    """The records as ``capture debezium`` lands them: a schema line, then SCHEMA_RECIPE's lines."""
    schemas: dict[str, str] = {}
    lines = []
    for rec in records:
        refs = []
        for part in ("key", "value"):
            text = _dumps(rec[part]["schema"])
            schemas[schema_id(text)] = text
            refs.append(f'"{schema_id(text)}"')
        args = [str(rec["offset"]), _dumps(rec["key"]["payload"]), _dumps(rec["value"]["payload"]), *refs]
        head, *rest = SCHEMA_RECIPE.split("\1")
        lines.append((head + "".join(a + r for a, r in zip(args, rest, strict=True))).encode())
    return [schema_header(schemas).rstrip(b"\n"), *lines]


def test_records_naming_their_schemas_parse_as_the_wrapped_ones() -> None:
    records = _wrapped_records()
    by_wrapper = [item for _, item in parse_lines([_dumps(r).encode() for r in records])]
    schemas: dict = {}
    by_id = list(parse_lines(_schema_lines(records), schemas=schemas))
    assert [item for _, item in by_id] == by_wrapper
    assert [lineno for lineno, _ in by_id] == [2, 3, 4]  # the schema line is no record
    assert len(schemas) == 2 and not any(isinstance(i, Quarantined) for i in by_wrapper)


def test_the_columns_a_record_naming_its_schemas_gives() -> None:
    records = _wrapped_records()
    lines = _schema_lines(records)
    schemas: dict = {}
    list(parse_lines(lines, schemas=schemas))
    told = wrapped_columns(lines[1], schemas)
    assert told is not None and told == wrapped_columns(_dumps(records[0]).encode())
    assert wrapped_columns(lines[1]) is None  # without its file's schemas it says nothing


def test_a_schema_no_line_defined_is_quarantined_with_its_reason() -> None:
    lines = _schema_lines(_wrapped_records())
    (_, item), *_ = parse_lines(lines[1:2], "f.jsonl")
    assert isinstance(item, Quarantined)
    assert "key_schema" in item.reason and "not defined by a schema line before it" in item.reason


def test_a_record_is_the_same_record_wrapped_or_naming_its_schemas() -> None:
    """After a crash the batch comes again and is read wrapped (``BatchReader.read``), while the file
    landed before names its schemas: the deduplication must see the same records."""
    rec = _wrapped_records()[0]
    landed = json.loads(_schema_lines([rec])[1])
    assert record_identity(landed["key"], landed["value"]) == record_identity(rec["key"], rec["value"])


def test_schema_ids_follow_the_content_and_wrapping_a_null_keeps_it_null() -> None:
    assert schema_id('{"type":"int32"}') == schema_id('{"type":"int32"}') != schema_id('{"type":"int64"}')
    assert schema_header({"b": "{}", "a": '{"x":1}'}) == b'{"schemas":{"a":{"x":1},"b":{}}}\n'
    assert wrapped('{"type":"int32"}', "5") == '{"schema":{"type":"int32"},"payload":5}'
    assert wrapped('{"type":"int32"}', None) is None and wrapped(None, "5") == "5"
