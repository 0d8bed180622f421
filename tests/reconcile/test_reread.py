"""The re-read of incomplete rows: execute-snapshot signals naming exactly their keys (pure)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.key_conditions import key_condition
from cdc_backfill.reconcile.reread import RereadError, reread_filter, reread_signals, sql_literal
from cdc_backfill.signals.conditions import check_condition
from cdc_backfill.signals.model import DATA_MAX


def test_one_signal_names_the_keys_and_many_keys_need_several() -> None:
    [one] = reread_signals("public.orders", ["id"], [(7,), (500,)])
    assert reread_filter(one) == "id IN (7, 500)" and one.collections == ("public\\.orders",)
    # Debezium 3 reads only the additional-conditions list (the single condition it ignores)
    assert one.data_dict()["additional-conditions"] == [
        {"data-collection": "public.orders", "filter": "id IN (7, 500)"}
    ]
    many = reread_signals("public.orders", ["id"], [(i,) for i in range(1000, 2000)])
    assert len(many) > 1 and all(len(s.data_json() or "") <= DATA_MAX for s in many)
    named = [
        int(v) for s in many for v in (reread_filter(s) or "").removeprefix("id IN (").rstrip(")").split(", ")
    ]
    assert named == list(range(1000, 2000))


def test_composite_and_text_keys_are_quoted_and_read_back_exactly() -> None:
    [sig] = reread_signals("public.lines", ["order_id", "Line"], [(1, "it's"), (2, "a:b")])
    cond = reread_filter(sig)
    assert cond == "(order_id = 1 AND \"Line\" = 'it''s') OR (order_id = 2 AND \"Line\" = 'a:b')"
    columns = ["order_id", "Line"]
    assert check_condition(cond, "postgresql", columns, "public.lines") == cond
    # the phantom rule reads it back as a key condition too
    key_condition(cond, "postgresql", [PgColumn("order_id", "integer", 23), PgColumn("Line", "text", 25)])


def test_literals() -> None:
    assert sql_literal(Decimal("1.50")) == "1.50"
    assert sql_literal(dt.date(2024, 2, 1)) == "'2024-02-01'"
    assert sql_literal(True) == "TRUE"
    with pytest.raises(RereadError, match="bytes"):
        sql_literal(b"\x00")
