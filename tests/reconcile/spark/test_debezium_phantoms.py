"""docs/design.md §6 rule 7 after a snapshot Debezium ran, on a hand-made landing in the layout
``capture debezium`` writes: rows deleted while the stream was lost are removed once Debezium said the
table's scan finished and the stream landed with that word is applied; not before, not after a stop."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cdc_backfill.ingest.column_sources import ColumnSources
from cdc_backfill.ingest.spark.job import ingest_landing
from cdc_backfill.landing.layout import debezium_dir, stream_dir
from cdc_backfill.landing.notifications import record_notifications
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.spark.job import reconcile_landing
from tests.support.state import state_frame

pytestmark = pytest.mark.spark

TABLE, SIGNAL = "s.t", "s.cdc_signal"
BATCH = "dbz-00000000000000000000-00000000000000000008.jsonl"
GIVEN = {TABLE: ([PgColumn("id", "integer", 23, nullable=False), PgColumn("v", "text", 25)], ["id"])}


def record(offset: int, table: str, op: str, key: dict, after: dict | None, snapshot: str = "false") -> str:
    schema, name = table.split(".")
    source = {"connector": "postgresql", "schema": schema, "table": name, "db": "app", "snapshot": snapshot,
              "lsn": 1000 + offset * 8, "commit_lsn": 1000 + offset * 8, "txId": offset}  # fmt: skip
    value = {"before": key if op == "d" else None, "after": after, "source": source, "op": op, "ts_ms": 1}
    return json.dumps({"partition": 0, "offset": offset, "key": key, "value": value})


def landing_with(root: Path, notes: list[dict[str, Any]], stopped: bool = False) -> Path:
    landing = root / "landing"
    execute = {"id": "dbz-1", "type": "execute-snapshot",
               "data": json.dumps({"data-collections": ["s\\.t"], "type": "incremental"})}  # fmt: skip
    lines = [
        record(0, TABLE, "c", {"id": 1}, {"id": 1, "v": "a"}),
        record(1, TABLE, "c", {"id": 2}, {"id": 2, "v": "b"}),
        record(2, TABLE, "c", {"id": 5}, {"id": 5, "v": "lost"}),  # deleted while the stream was lost
        record(3, TABLE, "c", {"id": 6}, {"id": 6, "v": "lost"}),
        record(4, SIGNAL, "c", {"id": "dbz-1"}, execute),  # P0
        record(5, TABLE, "c", {"id": 9}, {"id": 9, "v": "after"}),
        record(6, TABLE, "r", {"id": 1}, {"id": 1, "v": "a"}, snapshot="incremental"),
        record(7, TABLE, "r", {"id": 2}, {"id": 2, "v": "b"}, snapshot="incremental"),
        record(8, TABLE, "u", {"id": 1}, {"id": 1, "v": "a2"}),
    ]
    folder = stream_dir(landing)
    folder.mkdir(parents=True)
    (folder / BATCH).write_text("\n".join(lines) + "\n")
    debezium_dir(landing).mkdir(parents=True, exist_ok=True)
    record_notifications(landing, notes)
    return landing


def run(spark, landing: Path, state: Path) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    ingest_landing(spark, landing, None, ColumnSources(landing, SIGNAL, given=GIVEN))
    return reconcile_landing(spark, landing, state, [TABLE], SIGNAL)["collections"][TABLE]


def scanned(landed_in: str = BATCH, status: str = "SUCCEEDED") -> dict[str, Any]:
    return {"id": "dbz-1", "type": "TABLE_SCAN_COMPLETED", "landed_in": landed_in,
            "additional_data": {"scanned_collection": TABLE, "status": status}}  # fmt: skip


def keys(spark, state: Path) -> dict[int, str]:  # type: ignore[no-untyped-def]
    return {r["id"]: r["v"] for r in state_frame(spark, state, TABLE).collect()}


def test_a_finished_scan_removes_the_rows_debezium_did_not_read(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    started = {"id": "dbz-1", "type": "STARTED", "landed_in": BATCH, "additional_data": {}}
    landing = landing_with(tmp_path, [started, scanned()])
    info = run(spark, landing, tmp_path / "state")
    assert keys(spark, tmp_path / "state") == {1: "a2", 2: "b", 9: "after"}
    assert info["phantoms_removed"] == 2
    assert info["snapshots"]["dbz-1"] == "rows before its start removed"


@pytest.mark.parametrize(
    "notes",
    [
        [],  # Debezium has not said the scan finished
        [scanned("dbz-00000000000000000009-00000000000000000020.jsonl")],  # landed with stream not in the log
        [scanned(status="SQL_EXCEPTION")],
        # a stop of the table being read: COMPLETED under the signal's id, ABORTED under its own
        [
            {"id": "dbz-1", "type": "COMPLETED", "landed_in": BATCH},
            {"id": "x", "type": "ABORTED", "landed_in": BATCH},
        ],
    ],
    ids=["no-word", "not-applied", "failed-scan", "stopped"],
)
def test_nothing_is_removed_without_a_finished_scan_applied(spark, tmp_path: Path, notes: list) -> None:  # type: ignore[no-untyped-def]
    info = run(spark, landing_with(tmp_path, notes), tmp_path / "state")
    assert keys(spark, tmp_path / "state") == {1: "a2", 2: "b", 5: "lost", 6: "lost", 9: "after"}
    assert info["phantoms_removed"] == 0
