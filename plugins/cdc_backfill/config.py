"""Where the source database is: a SQLAlchemy URL from the command line, the environment or a config file.

Order, first found wins: an explicit ``--source`` value, ``CDC_BACKFILL_SOURCE_URL``, the file named by
``CDC_BACKFILL_CONFIG``, ``<project>/cdc_backfill.toml``, ``~/.config/cdc-backfill/config.toml``.
A config file holds::

    [source]
    url = "postgresql+psycopg2://user:secret@db.example.com:5432/app"

Whatever scheme the user writes (``postgresql://``, ``postgres://``, ``postgresql+psycopg2://``, an
Airflow connection URI, ``mssql://``, ...) becomes a URL for a driver that is installed in exactly one
place, :func:`sqlalchemy_url`; every engine on the source is made by :func:`source_engine`.

Passwords never leave this module unmasked except to open a connection: use :func:`mask_url` for
anything printed or logged.
"""

from __future__ import annotations

import importlib.util
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cdc_backfill.extras import EXTRA_OF_MODULE, install_hint
from cdc_backfill.runtime import project_root

if TYPE_CHECKING:
    import sqlalchemy as sa

SOURCE_URL_ENV = "CDC_BACKFILL_SOURCE_URL"
CONFIG_ENV = "CDC_BACKFILL_CONFIG"
# every command's --source, as its --help says it
SOURCE_HELP = (
    "the source database's URL, postgresql://user:password@host:5432/db (default: CDC_BACKFILL_SOURCE_URL, "
    "then the config file)"
)


class ConfigError(ValueError):
    """A config file or URL that cannot be used; the message says which and why."""


# What a bare scheme means (SQLAlchemy 2.1 maps a bare ``postgresql://`` to psycopg 3, which is not
# installed; Airflow's connection URIs write ``postgres://``), and the module each driver needs.
DEFAULT_DRIVERS = {
    "postgresql": "psycopg2",
    "postgres": "psycopg2",
    "mssql": "pymssql",
    "sqlserver": "pymssql",
    "oracle": "oracledb",
    "mysql": "pymysql",
}
_DIALECTS = {"postgres": "postgresql", "sqlserver": "mssql"}
DRIVER_MODULES = {
    "psycopg2": "psycopg2",
    "psycopg": "psycopg",
    "pg8000": "pg8000",
    "asyncpg": "asyncpg",
    "pymssql": "pymssql",
    "pyodbc": "pyodbc",
    "oracledb": "oracledb",
    "cx_oracle": "cx_Oracle",
    "pymysql": "pymysql",
    "mysqldb": "MySQLdb",
}
SUPPORTED = "postgresql://, postgres://, postgresql+psycopg2://, mssql://, oracle://, mysql://"


def _driver_installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def sqlalchemy_url(url: str) -> str:
    """The URL the user gave, with a dialect and a driver that is installed (password untouched).

    ``postgresql://u@h/db`` and ``postgres://u@h/db`` -> ``postgresql+psycopg2://u@h/db``. An explicit
    driver is kept when it is installed. Anything else is a :class:`ConfigError` naming what works.
    """
    text = url.strip()
    scheme, sep, rest = text.partition("://")
    if not sep or not scheme:
        hint = " (a libpq key=value string?)" if "=" in text and " " in text else ""
        raise ConfigError(
            f"not a database URL{hint}: {mask_url(text)!r}; write it as "
            "postgresql://user:password@host:5432/database"
        )
    if scheme.lower().startswith("jdbc:"):
        raise ConfigError(
            f"a JDBC URL is not supported: {mask_url(text)!r}; write it as "
            "postgresql://user:password@host:5432/database"
        )
    dialect, _, driver = scheme.lower().partition("+")
    if dialect not in DEFAULT_DRIVERS:
        raise ConfigError(f"unsupported database URL scheme {scheme + '://'!r}; supported: {SUPPORTED}")
    dialect_name = _DIALECTS.get(dialect, dialect)
    driver = driver or DEFAULT_DRIVERS[dialect]
    module = DRIVER_MODULES.get(driver)
    if module is None or not _driver_installed(module):
        default = DEFAULT_DRIVERS[dialect]
        if default != driver and _driver_installed(DRIVER_MODULES[default]):
            fix = f"write {dialect_name}:// (uses {default}, which is installed)"
        else:
            wanted = default if module is None else module
            extra = EXTRA_OF_MODULE.get(wanted)
            fix = f"install it: {install_hint(extra) if extra else 'pip install ' + wanted}"
        raise ConfigError(f"the database driver {driver!r} of {scheme + '://'!r} is not installed; {fix}")
    return f"{dialect_name}+{driver}://{rest}"


def backend(url: str) -> str:
    """``postgresql``, ``mssql``, ``oracle`` or ``mysql`` for any URL :func:`sqlalchemy_url` accepts."""
    return sqlalchemy_url(url).split("+", 1)[0]


def source_engine(url: str, **kwargs: Any) -> sa.Engine:
    """A SQLAlchemy engine on the source, whatever form its URL was given in."""
    import sqlalchemy as sa

    return sa.create_engine(sqlalchemy_url(url), **kwargs)


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
        raise ConfigError(f'{path}: [source] must have url = "postgresql://user:password@host:5432/db"')
    return source["url"]


def resolve_source(explicit: str | None = None) -> SourceSetting | None:
    """The configured source, or None when nothing names one (callers may then start the embedded server)."""
    if explicit:
        return _setting(explicit, "--source")
    if os.environ.get(SOURCE_URL_ENV):
        return _setting(os.environ[SOURCE_URL_ENV], SOURCE_URL_ENV)
    for path in config_files():
        if path.is_file():
            url = _url_from_file(path)
            if url:
                return _setting(url, str(path))
    return None


def _setting(url: str, origin: str) -> SourceSetting:
    try:
        return SourceSetting(sqlalchemy_url(url), origin)
    except ConfigError as exc:
        raise ConfigError(f"{exc} (from {origin})") from None


_PASSWORD_RE = re.compile(r"(?P<scheme>[a-z0-9+.\-]+://)(?P<user>[^:/@]*):(?P<pw>[^@]*)@", re.IGNORECASE)


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***``; safe to print and log."""
    return _PASSWORD_RE.sub(lambda m: f"{m['scheme']}{m['user']}:***@", url)


def require_source_url(explicit: str | None = None) -> str:
    """The source URL for a command, or exit with how to give one (CLI helper)."""
    setting = resolve_source(explicit)
    if setting is None:
        files = " or ".join(str(p) for p in config_files())
        raise SystemExit(
            "no source: give --source postgresql://user@host:5432/db, or set CDC_BACKFILL_SOURCE_URL, "
            f'or write [source] url = "..." in {files}'
        )
    return setting.url
