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
    assert config.resolve_source() == config.SourceSetting("postgresql://file@h/db", str(cfg))
    monkeypatch.setenv(config.SOURCE_URL_ENV, "postgresql://env@h/db")
    assert config.resolve_source().origin == config.SOURCE_URL_ENV
    assert config.resolve_source("postgresql://cli@h/db").url == "postgresql://cli@h/db"


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
