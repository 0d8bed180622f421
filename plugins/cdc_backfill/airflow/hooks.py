"""Hooks: turn an Airflow connection into what the package needs (a SQLAlchemy URL)."""

from __future__ import annotations

from airflow.sdk import BaseHook

from cdc_backfill.config import resolve_source

# Airflow connection URIs name PostgreSQL "postgres://" (conn_type "postgres"); SQLAlchemy wants a
# dialect+driver. The other sources follow the same rule.
_SCHEMES = {
    "postgres": "postgresql+psycopg2",
    "postgresql": "postgresql+psycopg2",
    "mssql": "mssql+pymssql",
    "oracle": "oracle+oracledb",
    "mysql": "mysql+pymysql",
}


def sqlalchemy_url_from_airflow_uri(uri: str) -> str:
    """``postgres://u:p@h:5432/db`` -> ``postgresql+psycopg2://u:p@h:5432/db`` (pure)."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        raise ValueError(f"not a connection URI: {uri.split('@')[-1]}")
    return f"{_SCHEMES.get(scheme, scheme)}://{rest}"


class CdcSourceHook(BaseHook):
    """The source database of a snapshot, from an Airflow connection or the project's config.

    An empty ``source_conn_id`` falls back to ``CDC_BACKFILL_SOURCE_URL`` / the config file.
    """

    conn_name_attr = "source_conn_id"
    default_conn_name = "cdc_source"
    conn_type = "postgres"
    hook_name = "cdc_backfill source"

    def __init__(self, source_conn_id: str = "", **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.source_conn_id = source_conn_id

    def get_source_url(self) -> str | None:
        if self.source_conn_id:
            conn = self.get_connection(self.source_conn_id)
            return sqlalchemy_url_from_airflow_uri(conn.get_uri())
        setting = resolve_source()
        return setting.url if setting else None
