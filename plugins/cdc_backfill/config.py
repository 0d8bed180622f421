"""Where the source database is: a SQLAlchemy URL from the command line, the environment or a config file.

Order, first found wins: an explicit ``--source`` value, ``CDC_BACKFILL_SOURCE_URL``, the file named by
``CDC_BACKFILL_CONFIG``, ``<project>/cdc_backfill.toml``, ``~/.config/cdc-backfill/config.toml``.
A config file holds::

    [source]
    url = "postgresql+psycopg2://user:secret@db.example.com:5432/app"

Passwords never leave this module unmasked except to open a connection: use :func:`mask_url` for
anything printed or logged.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from cdc_backfill.runtime import project_root

SOURCE_URL_ENV = "CDC_BACKFILL_SOURCE_URL"
CONFIG_ENV = "CDC_BACKFILL_CONFIG"


class ConfigError(ValueError):
    """A config file or URL that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class SourceSetting:
    url: str
    origin: str  # where it came from, for messages: "--source", the variable or the file path

    @property
    def masked(self) -> str:
        return mask_url(self.url)


def config_files() -> list[Path]:
    """The config files looked at, in order."""
    files: list[Path] = []
    if os.environ.get(CONFIG_ENV):
        files.append(Path(os.environ[CONFIG_ENV]).expanduser())
    files.append(project_root() / "cdc_backfill.toml")
    files.append(Path("~/.config/cdc-backfill/config.toml").expanduser())
    return files


def _url_from_file(path: Path) -> str | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    source = data.get("source")
    if source is None:
        return None
    if not isinstance(source, dict) or not isinstance(source.get("url"), str):
        raise ConfigError(f'{path}: [source] must have url = "<SQLAlchemy URL>"')
    return source["url"]


def resolve_source(explicit: str | None = None) -> SourceSetting | None:
    """The configured source, or None when nothing names one (callers may then start the embedded server)."""
    if explicit:
        return SourceSetting(explicit, "--source")
    if os.environ.get(SOURCE_URL_ENV):
        return SourceSetting(os.environ[SOURCE_URL_ENV], SOURCE_URL_ENV)
    for path in config_files():
        if path.is_file():
            url = _url_from_file(path)
            if url:
                return SourceSetting(url, str(path))
    return None


_PASSWORD_RE = re.compile(r"(?P<scheme>[a-z0-9+.\-]+://)(?P<user>[^:/@]*):(?P<pw>[^@]*)@", re.IGNORECASE)


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***``; safe to print and log."""
    return _PASSWORD_RE.sub(lambda m: f"{m['scheme']}{m['user']}:***@", url)


def require_source_url(explicit: str | None = None) -> str:
    """The source URL for a command, or exit with how to give one (CLI helper)."""
    setting = resolve_source(explicit)
    if setting is None:
        raise SystemExit("no source: give --source URL, or set CDC_BACKFILL_SOURCE_URL, or a config file")
    return setting.url
