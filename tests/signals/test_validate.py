from __future__ import annotations

import pytest

from cdc_backfill.signals.model import AdditionalCondition, Signal, SignalError
from cdc_backfill.signals.source_tables import Catalog, TableInfo, collection_name
from cdc_backfill.signals.validate import DEFAULT_CHUNK_SIZE, validate

CATALOG = Catalog(
    "postgresql",
    (
        TableInfo("public", "orders", ("id", "status", "amount", "order_no"), ("id",)),
        TableInfo("public", "customers", ("id", "name"), ("id",)),
        TableInfo("public", "events", ("event_id", "payload"), ()),
        TableInfo("sales", "lines", ("order_id", "line_no", "qty"), ("order_id", "line_no")),
        TableInfo("my.schema", "t", ("id",), ("id",)),
    ),
)


def execute(*collections: str, **kw: object) -> Signal:
    return Signal("s1", "execute-snapshot", collections, "incremental", **kw)  # type: ignore[arg-type]


def test_collections_resolve_once_with_their_keys() -> None:
    v = validate(execute("public\\.orders", "public\\..*", "sales.lines"), CATALOG)
    assert v.collections == ("public.orders", "public.customers", "sales.lines")
    assert v.errors == {
        "public.events": "public.events has no primary key: give a surrogate-key (a unique, non-null column)"
    }
    plans = {p.collection: p for p in v.plans}
    assert plans["sales.lines"].key == ("order_id", "line_no")
    assert plans["public.orders"].chunk_size == DEFAULT_CHUNK_SIZE


def test_quoted_names_with_dots() -> None:
    assert collection_name("my.schema", "t") == '"my.schema"."t"'
    assert validate(execute('"my\\.schema"\\."t"'), CATALOG).collections == ('"my.schema"."t"',)


def test_conditions_apply_per_collection() -> None:
    v = validate(
        execute(
            "public\\.(orders|customers)",
            conditions=(AdditionalCondition("public.orders", "status = 'open'"),),
            condition="id > 5",
        ),
        CATALOG,
    )
    plans = {p.collection: p.condition for p in v.plans}
    assert plans == {"public.orders": "status = 'open'", "public.customers": "id > 5"}


def test_a_bad_surrogate_key_is_reported_per_collection() -> None:
    v = validate(execute("public.orders", "public.customers", surrogate_key="order_no"), CATALOG)
    assert v.collections == ("public.orders",)
    assert "surrogate-key 'order_no' is not a column of public.customers" in v.errors["public.customers"]
    with pytest.raises(SignalError, match="surrogate-key 'order_no'"):
        v.raise_if_any_error()


@pytest.mark.parametrize(
    ("signal", "message"),
    [
        (execute(), "data-collections is empty"),
        (execute("public.order"), "'public.order' matches no table in the source"),
        (execute("public.order"), "did you mean public.orders"),
        (execute("public.(orders"), "is not a valid regular expression"),
        (execute("public.orders", chunk_size=0), "chunk-size must be between 1 and 1,000,000, not 0"),
        (execute("public.orders", chunk_size=2_000_000), "not 2000000"),
        (Signal("s", "execute-snapshot", ("public.orders",), "blocking"), "snapshot type 'blocking' is not supported"),
        (execute("public.orders", conditions=(AdditionalCondition("sales.lines", "qty > 1"),)), "matches none of the collections"),
        (Signal("s", "stop-snapshot", ("nothing.here",), "incremental"), "matches no table"),
        (Signal("s", "snapshot-window-open"), "written by the snapshot engine"),
        (execute("public.cdc_signal_status"), "matches no table"),
    ],
)  # fmt: skip
def test_signal_level_refusals(signal: Signal, message: str) -> None:
    with pytest.raises(SignalError) as err:
        validate(signal, CATALOG)
    assert message in str(err.value)


def test_protected_tables_are_never_snapshotted() -> None:
    catalog = Catalog(
        "postgresql", (*CATALOG.tables, TableInfo("public", "cdc_signal", ("id", "type", "data"), ("id",)))
    )
    with pytest.raises(SignalError, match="signal bookkeeping table"):
        validate(execute("public\\..*"), catalog, protected=("public.cdc_signal",))


def test_pause_resume_and_log_need_no_catalog() -> None:
    for s in (Signal("p", "pause-snapshot"), Signal("r", "resume-snapshot"), Signal("l", "log", message="m")):
        assert validate(s, Catalog("postgresql", ())).plans == ()
