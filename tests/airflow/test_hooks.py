"""The source hook: the one default connection, and what to do when it is missing."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.airflow


def test_a_missing_connection_names_the_command_that_creates_it() -> None:
    from cdc_backfill.airflow.hooks import missing_connection, no_source

    text = missing_connection("cdc_source")
    assert (
        "`airflow connections add cdc_source --conn-uri 'postgresql://USER:PASSWORD@HOST:5432/DATABASE'`"
        in text
    )
    assert "AIRFLOW_CONN_CDC_SOURCE" in text and "scheduler and workers" in text
    assert "CDC_BACKFILL_SOURCE_URL in the environment of Airflow's scheduler and workers" in no_source()


def test_default_cdc_source_falls_back_to_the_project_source_other_ids_do_not(
    airflow_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cdc_backfill.airflow.hooks import CdcSourceHook, SourceNotConfigured

    monkeypatch.delenv("AIRFLOW_CONN_CDC_SOURCE", raising=False)
    monkeypatch.setenv("CDC_BACKFILL_SOURCE_URL", "postgresql://u@h:5432/db")
    assert CdcSourceHook().get_source_url() == "postgresql+psycopg2://u@h:5432/db"
    with pytest.raises(SourceNotConfigured, match="'other_conn' is not defined: create it with"):
        CdcSourceHook("other_conn").get_source_url()
    monkeypatch.delenv("CDC_BACKFILL_SOURCE_URL")
    monkeypatch.setenv("CDC_BACKFILL_CONFIG", "/nonexistent.toml")
    monkeypatch.setenv("CDC_BACKFILL_HOME", "/nonexistent")
    with pytest.raises(SourceNotConfigured, match="'cdc_source' is not defined"):
        CdcSourceHook().get_source_url()
    monkeypatch.setenv("AIRFLOW_CONN_CDC_SOURCE", "postgres://cdc:pw@db:5433/app")
    assert CdcSourceHook().get_source_url() == "postgresql+psycopg2://cdc:pw@db:5433/app"
