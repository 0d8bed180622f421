from __future__ import annotations

import json

import pytest

from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.signals.model import DATA_MAX, Signal
from cdc_backfill.signals.source_tables import Catalog, TableInfo
from cdc_backfill.signals.validate import validate
from cdc_backfill.verify.ranges import Bound, key_ranges
from cdc_backfill.verify.repair import collection_pattern, repair_signal

ID = PgColumn("id", "bigint", 20)
W = PgColumn("w", "text", 25)
CATALOG = Catalog("postgresql", (TableInfo("public", "words", ("id", "w", "n"), ("id", "w")),))


def ranges(n: int, key=(ID,), width: int = 1):  # type: ignore[no-untyped-def]
    bounds = [
        Bound(tuple(str(i * 10).rjust(width, "0") for _ in key), tuple(str(i * 10) for _ in key))
        for i in range(1, n)
    ]
    return key_ranges(bounds)


def test_adjacent_ranges_merge_into_one_predicate() -> None:
    rep = repair_signal("public.orders", [ID], ranges(8), [1, 2, 3, 6], signal_id="sig-1")
    assert rep.scope == "ranges"
    assert rep.condition == '("id" > 10 AND "id" <= 40) OR ("id" > 60 AND "id" <= 70)'
    data = json.loads(rep.signal.data_json() or "")
    assert data == {
        "data-collections": ["public\\.orders"],
        "type": "incremental",
        "additional-condition": rep.condition,
    }
    assert rep.to_dict() == {"signal_id": "sig-1", "condition": rep.condition, "scope": "ranges"}


def test_open_ended_ranges() -> None:
    assert repair_signal("public.orders", [ID], ranges(3), [0]).condition == '"id" <= 10'
    assert repair_signal("public.orders", [ID], ranges(3), [2]).condition == '"id" > 20'
    whole = repair_signal("public.orders", [ID], ranges(3), [0, 1, 2])
    assert whole.condition is None and whole.scope == "table"


def test_a_condition_too_long_for_the_signal_table_widens() -> None:
    many = ranges(200, key=(ID, W), width=60)
    odd = list(range(1, 199, 2))
    rep = repair_signal("public.words", [ID, W], many, odd)
    assert rep.scope == "span"
    assert rep.condition is not None and rep.condition.count(" AND ") == 1
    assert len(rep.signal.data_json() or "") <= DATA_MAX
    huge = key_ranges([Bound(("x" * 3000,), ("x" * 3000,))])
    assert repair_signal("public.orders", [W], huge, [0]).scope == "table"


def test_the_condition_passes_the_signals_own_validation() -> None:
    key = [ID, W]
    cut = key_ranges([Bound(("5", "a:b"), ("5", "a:b")), Bound(("9", "it's 100%"), ("9", "it's 100%"))])
    rep = repair_signal("public.words", key, cut, [1])
    validated = validate(rep.signal, CATALOG)
    validated.raise_if_any_error()
    assert validated.plans[0].condition == rep.condition
    assert Signal.from_row(rep.signal.id, rep.signal.type, rep.signal.data_json()) == rep.signal


def test_nothing_to_repair_is_an_error() -> None:
    with pytest.raises(ValueError, match="nothing differs"):
        repair_signal("public.orders", [ID], ranges(3), [])
    assert collection_pattern('"a.b"."c"') == '"a\\.b"\\."c"'
