"""Landing a stream into the typed log: rolls, manifests, and what a crash leaves."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from cdc_backfill.events.positions import position_of_key
from cdc_backfill.landing import writer as writer_module
from cdc_backfill.landing.event_log import describe, log_files
from cdc_backfill.landing.manifests import landed_log_position, roll_manifests
from cdc_backfill.landing.writer import LogWriter
from cdc_backfill.pgtypes import PgColumn

ORDERS = (
    PgColumn("id", "integer", 23),
    PgColumn("amount", "numeric(12,2)", 1700),
    PgColumn("note", "text", 25),
)
TAGS = (PgColumn("tag", "text", 25),)


def fill(writer: LogWriter, landing: Path) -> None:
    orders = describe(landing, "public.orders", ORDERS, ["id"])
    tags = describe(landing, "public.tags", TAGS, ["tag"])
    writer.write("public.orders", orders, "c", (100, 10), [b"1", b"9.99", b""], ts_ms=5)
    writer.write("public.tags", tags, "c", (100, 11), [b"red"])
    writer.commit_done(120)
    writer.write("public.orders", orders, "u", (200, 20), [b"1", b"10.00", None], unchanged=["note"])
    writer.write("public.orders", orders, "d", (200, 21), [b"1", None, None])
    writer.commit_done(220)


def test_a_roll_lands_every_collection_then_its_manifest(tmp_path: Path) -> None:
    writer = LogWriter(tmp_path, "capture:cdc_backfill")
    fill(writer, tmp_path)
    assert writer.durable_end_lsn == 0  # nothing may be confirmed before the roll
    assert writer.roll() == 220 and landed_log_position(tmp_path) == (200, 21)
    [orders] = log_files(tmp_path, "public.orders")
    rows = pq.read_table(orders).to_pylist()
    assert [(position_of_key(r["_cdc_position"]), r["_cdc_op"], r["amount"], r["note"], r["_cdc_unchanged"])
            for r in rows] == [
        ((100, 10), "c", Decimal("9.99"), "", None),
        ((200, 20), "u", Decimal("10.00"), None, ["note"]),
        ((200, 21), "d", None, None, None),
    ]  # fmt: skip
    assert len(log_files(tmp_path, "public.tags")) == 1
    # what the reconcile plans its run by, without a Spark job over the events
    [manifest] = roll_manifests(tmp_path)
    assert manifest["counts"] == {
        "public.orders": {"c": 1, "u": 1, "d": 1, "r": 0, "t": 0, "left_out": 0, "unchanged": 1},
        "public.tags": {"c": 1, "u": 0, "d": 0, "r": 0, "t": 0, "left_out": 0, "unchanged": 0},
    }
    assert LogWriter(tmp_path, "again").rolls == 0 and len(log_files(tmp_path, "public.orders")) == 1  # kept


def test_files_of_a_roll_that_never_wrote_its_manifest_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = LogWriter(tmp_path, "capture")
    fill(first, tmp_path)
    first.roll()
    crashing = LogWriter(tmp_path, "capture")
    orders = describe(tmp_path, "public.orders", ORDERS, ["id"])
    crashing.write("public.orders", orders, "c", (300, 30), [b"2", b"1.00", b"x"])
    crashing.commit_done(320)

    def crash(*_: object) -> None:
        raise OSError("killed before the manifest")

    monkeypatch.setattr(writer_module, "commit_roll", crash)
    with pytest.raises(OSError, match="before the manifest"):
        crashing.roll()
    monkeypatch.undo()
    assert len(log_files(tmp_path, "public.orders")) == 2  # the file landed, its manifest did not
    LogWriter(tmp_path, "capture")  # the next start
    assert len(log_files(tmp_path, "public.orders")) == 1 and landed_log_position(tmp_path) == (200, 21)


def test_events_out_of_position_order_land_sorted_and_the_manifest_has_the_greatest(tmp_path: Path) -> None:
    writer = LogWriter(tmp_path, "ingest:a.json")
    orders = describe(tmp_path, "public.orders", ORDERS, ["id"])
    for position, key in (((300, 1), b"3"), ((100, 1), b"1"), ((200, 1), b"2")):
        writer.write("public.orders", orders, "c", position, [key, b"1.00", b"x"])
    writer.roll()
    (path,) = log_files(tmp_path, "public.orders")
    table = pq.read_table(path)
    assert [position_of_key(k) for k in table.column("_cdc_position").to_pylist()] == [
        (100, 1),
        (200, 1),
        (300, 1),
    ]
    assert table.column("id").to_pylist() == [1, 2, 3] and table.column("_cdc_line").to_pylist() == [2, 3, 1]
    assert landed_log_position(tmp_path) == (300, 1)
