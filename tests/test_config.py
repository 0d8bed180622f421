from __future__ import annotations

from pathlib import Path

import pytest

from cdc_backfill import config


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(config.SOURCE_URL_ENV, raising=False)
    monkeypatch.delenv(config.CONFIG_ENV, raising=False)
    monkeypatch.setenv("CDC_BACKFILL_HOME", str(tmp_path / "project"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


def test_nothing_configured_gives_none() -> None:
    assert config.resolve_source() is None


def test_order_explicit_then_env_then_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('[source]\nurl = "postgresql://file@h/db"\n')
    monkeypatch.setenv(config.CONFIG_ENV, str(cfg))
    assert config.resolve_source() == config.SourceSetting("postgresql+psycopg2://file@h/db", str(cfg))
    monkeypatch.setenv(config.SOURCE_URL_ENV, "postgresql://env@h/db")
    assert config.resolve_source().origin == config.SOURCE_URL_ENV
    assert config.resolve_source("postgresql://cli@h/db").url == "postgresql+psycopg2://cli@h/db"


def test_project_config_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "cdc_backfill.toml").write_text('[source]\nurl = "mssql+pymssql://sa:pw@h/db"\n')
    setting = config.resolve_source()
    assert setting is not None
    assert setting.url.startswith("mssql+pymssql://")
    assert setting.masked == "mssql+pymssql://sa:***@h/db"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[source\nurl=1", "not valid TOML"),
        ("[source]\nurl = 5\n", r"\[source\] must have url"),
    ],
)
def test_bad_config_file_says_which_and_why(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, message: str
) -> None:
    cfg = tmp_path / "bad.toml"
    cfg.write_text(text)
    monkeypatch.setenv(config.CONFIG_ENV, str(cfg))
    with pytest.raises(config.ConfigError, match=message) as err:
        config.resolve_source()
    assert str(cfg) in str(err.value)


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql+psycopg2://u:s3cr3t@h:5432/db", "postgresql+psycopg2://u:***@h:5432/db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("oracle+oracledb://u:p%40ss@h/?service_name=x", "oracle+oracledb://u:***@h/?service_name=x"),
    ],
)
def test_mask_url_hides_passwords(url: str, masked: str) -> None:
    assert config.mask_url(url) == masked


@pytest.mark.parametrize(
    ("given", "url"),
    [
        ("postgresql://u:pw@h:5432/db", "postgresql+psycopg2://u:pw@h:5432/db"),
        ("postgres://u@h/db", "postgresql+psycopg2://u@h/db"),  # Airflow's URIs and many tools
        ("POSTGRESQL://u@h/db", "postgresql+psycopg2://u@h/db"),
        ("postgresql+psycopg2://u@h/db?sslmode=require", "postgresql+psycopg2://u@h/db?sslmode=require"),
        ("  postgresql://u@h/db\n", "postgresql+psycopg2://u@h/db"),  # pasted with blanks
        ("mssql://sa:pw@h:1433/db", "mssql+pymssql://sa:pw@h:1433/db"),
        ("sqlserver://sa@h/db", "mssql+pymssql://sa@h/db"),
    ],
)
def test_every_way_of_writing_a_url_gets_an_installed_driver(given: str, url: str) -> None:
    assert config.sqlalchemy_url(given) == url


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("redis://h:6379", "unsupported database URL scheme 'redis://'; supported: postgresql://"),
        ("jdbc:postgresql://h:5432/db", "a JDBC URL is not supported"),
        ("host=h dbname=db user=u", "not a database URL (a libpq key=value string?)"),
        ("h:5432/db", "not a database URL"),
        (
            "postgresql+nosuchdriver://u@h/db",
            "'nosuchdriver' of 'postgresql+nosuchdriver://' is not installed",
        ),
    ],
)
def test_a_url_that_cannot_work_is_one_clear_line(given: str, message: str) -> None:
    with pytest.raises(config.ConfigError) as err:
        config.sqlalchemy_url(given)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_a_missing_driver_names_the_url_that_works(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "_driver_installed", lambda module: module != "psycopg")
    with pytest.raises(config.ConfigError, match=r"write postgresql:// \(uses psycopg2"):
        config.sqlalchemy_url("postgresql+psycopg://u@h/db")


def test_a_bad_url_says_where_it_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(config.SOURCE_URL_ENV, "mongodb://secret:pw@h/db")
    with pytest.raises(config.ConfigError, match=r"mongodb.*\(from CDC_BACKFILL_SOURCE_URL\)"):
        config.resolve_source()


def test_no_source_names_every_way_to_give_one(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as err:
        config.require_source_url()
    text = str(err.value)
    assert "--source postgresql://" in text and config.SOURCE_URL_ENV in text
    assert str(tmp_path / "project" / "cdc_backfill.toml") in text
