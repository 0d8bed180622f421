"""Every op of DataWorks' whole-database sync format (``events.dataworks``): row ops, a truncate, and
the records that change no row (heartbeats, transaction and XA markers, GTIDs, schema changes)."""

from __future__ import annotations

from typing import Any

import pytest

from cdc_backfill.events.dataworks import DDL_OPS, MARKER_OPS, parse_dataworks
from cdc_backfill.events.model import ParseError
from cdc_backfill.events.positions import DATAWORKS_OTHER

COLUMNS = [{"name": "id", "type": "LONG"}, {"name": "v", "type": "STRING"}]


def record(op: str, before: dict | None = None, after: dict | None = None, **payload: Any) -> dict[str, Any]:
    wrap = lambda row: None if row is None else {"dataColumn": row}  # noqa: E731
    return {
        "schema": {"dataColumn": COLUMNS, "primaryKey": "id", "source": {"dbType": "MySQL", "dbName": "d", "tableName": "t"}},
        "payload": {"before": wrap(before), "after": wrap(after), "sequenceId": "42", "op": op,
                    "timestamp": {"eventTime": 5}, "ddl": None, **payload},
        "version": "0.0.1",
    }  # fmt: skip


def test_a_truncate_empties_its_collection_at_its_sequence_id() -> None:
    [event] = parse_dataworks(record("TRUNCATE"))
    assert (event.collection, event.op, event.key, event.position) == (
        "d.t",
        "t",
        None,
        (42, DATAWORKS_OTHER),
    )
    assert event.source_ts_ms == 5


@pytest.mark.parametrize("op", sorted(MARKER_OPS | DDL_OPS))
def test_a_record_that_changes_no_row_is_a_marker(op: str) -> None:
    ddl = "ALTER TABLE t ADD COLUMN w varchar(10)" if op in DDL_OPS else None
    [event] = parse_dataworks(record(op, ddl=ddl))
    assert (event.op, event.collection, event.key, event.after) == ("h", None, None, None)
    assert event.position == (42, DATAWORKS_OTHER)


def test_the_ops_the_format_lists_are_all_known() -> None:
    listed = {"CREATE", "ALTER", "ERASE", "QUERY", "TRUNCATE", "RENAME", "CINDEX", "DINDEX", "TRANSACTION_BEGIN",
              "TRANSACTION_END", "GTID", "XACOMMIT", "XAROLLBACK", "MHEARTBEAT"}  # fmt: skip
    for op in listed:
        parse_dataworks(record(op))  # none is refused


def test_an_op_the_format_does_not_have_is_refused_by_name() -> None:
    with pytest.raises(ParseError, match="unknown op 'MERGE'"):
        parse_dataworks(record("MERGE", after={"id": 1, "v": "x"}))
