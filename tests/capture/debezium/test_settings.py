"""The Debezium connector's configuration built from the project's settings (pure): the signal table
named the way each connector reads it, the traps of Debezium 3.6 handled, bad settings refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_backfill.capture.debezium.settings import (
    DebeziumConfigError,
    DebeziumSettings,
    connector_properties,
    signal_data_collection,
)


def settings(url: str, **kw: object) -> DebeziumSettings:
    return DebeziumSettings(url, ("public.orders",), "public.cdc_signal", Path("lake"), **kw)  # type: ignore[arg-type]


def test_postgresql() -> None:
    p = connector_properties(settings("postgresql://cdc:s%40cret@db:5433/app", chunk_size=8192, poll_ms=10))
    assert p["connector.class"] == "io.debezium.connector.postgresql.PostgresConnector"
    assert (p["database.hostname"], p["database.port"], p["database.user"], p["database.password"]) == (
        "db", "5433", "cdc", "s@cret",
    )  # fmt: skip
    assert p["database.dbname"] == "app" and p["plugin.name"] == "pgoutput"
    assert p["signal.data.collection"] == "public.cdc_signal"  # schema.table: a prefixed name is ignored
    assert p["table.include.list"] == r"public\.orders,public\.cdc_signal"  # the watermarks are captured
    assert p["snapshot.mode"] == "no_data" and p["decimal.handling.mode"] == "string"
    assert p["incremental.snapshot.chunk.size"] == "8192" and p["poll.interval.ms"] == "10"
    assert p["offset.storage.file.filename"] == str(Path("lake/_debezium/cdc_backfill.offsets"))
    assert "schema.history.internal" not in p


def test_the_signal_table_is_named_the_way_each_connector_reads_it() -> None:
    assert signal_data_collection("sqlserver", "dbo.cdc_signal", "app") == "app.dbo.cdc_signal"
    assert signal_data_collection("oracle", "app.cdc_signal", "orclpdb1") == "ORCLPDB1.APP.CDC_SIGNAL"
    assert signal_data_collection("mysql", "app.cdc_signal", "") == "app.cdc_signal"
    with pytest.raises(DebeziumConfigError, match="silently ignored"):
        signal_data_collection("postgresql", "app.public.cdc_signal", "app")


def test_other_connectors_keep_their_schema_history_in_the_landing_zone() -> None:
    p = connector_properties(
        DebeziumSettings("mssql://sa:pw@sql:1433/app", ("dbo.orders",), "dbo.cdc_signal", Path("lake"))
    )
    assert p["connector.class"].endswith("SqlServerConnector") and p["database.names"] == "app"
    assert p["signal.data.collection"] == "app.dbo.cdc_signal"
    assert p["schema.history.internal.file.filename"] == str(Path("lake/_debezium/cdc_backfill.history"))
    p = connector_properties(DebeziumSettings("mysql://u:p@my/", ("app.t",), "app.cdc_signal", Path("lake")))
    assert p["database.include.list"] == "app" and p["database.port"] == "3306"


@pytest.mark.parametrize(
    ("url", "kw", "reason"),
    [
        ("db2://x/y", {}, "no Debezium connector for a db2:// source"),
        ("postgresql://db", {}, "names no database"),
        ("postgresql://db/app", {"watermarking": "insert_update"}, "one of insert_insert, insert_delete"),
        ("postgresql://db/app", {"chunk_size": 0}, "between 1 and 1,000,000"),
    ],
)
def test_bad_settings_are_refused_with_the_reason(url: str, kw: dict, reason: str) -> None:
    with pytest.raises(DebeziumConfigError, match=reason):
        connector_properties(settings(url, **kw))


@pytest.mark.debezium
@pytest.mark.parametrize(
    ("url", "collection", "signal", "extra"),
    [
        (
            "mssql://sa:Cdc-backfill-1@127.0.0.1:1/cdc",
            "dbo.orders",
            "dbo.cdc_signal",
            {"driver.loginTimeout": "2"},
        ),
        ("mysql://root:cdc@127.0.0.1:1/cdc", "cdc.orders", "cdc.cdc_signal", {}),
        (
            "oracle://c%23%23dbzuser:dbz@127.0.0.1:1/FREE",
            "CDC.ORDERS",
            "CDC.CDC_SIGNAL",
            {"database.pdb.name": "FREEPDB1"},
        ),
    ],
)
def test_other_sources_configurations_pass_their_connector_classes_validation(
    url: str, collection: str, signal: str, extra: dict, tmp_path: Path
) -> None:
    """No server here: the connector class validates every property, and only its connection attempt
    (to a closed port) fails."""
    from cdc_backfill.capture.debezium.connector import connector_errors
    from tests.support.debezium import require_engine

    require_engine()
    props = connector_properties(DebeziumSettings(url, (collection,), signal, tmp_path, extra=extra))
    errors = connector_errors(props)
    assert set(errors) <= {"database.hostname", "database.user", "database.password", "database.port"}, errors
    assert errors, "the connection to a closed port cannot have succeeded"
