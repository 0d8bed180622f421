"""Connecting to PostgreSQL below SQLAlchemy: the session settings every reader of the source uses and
the libpq connection string of a replication or plain psycopg2 connection. The capture and the snapshot
engine both stand on this module; neither imports the other for it."""

from __future__ import annotations

from sqlalchemy.engine import make_url

from cdc_backfill.config import ConfigError, sqlalchemy_url

# Values travel as text the same way whatever the server's defaults: UTC, ISO dates, floats that
# round-trip, bytea in hex.
SESSION_OPTIONS = "-c TimeZone=UTC -c DateStyle=ISO -c extra_float_digits=3 -c bytea_output=hex"


def libpq_dsn(url: str, replication: bool = False) -> str:
    """A libpq connection string from a database URL (quoted values; the password included)."""
    u = make_url(sqlalchemy_url(url))
    if u.get_backend_name() != "postgresql":
        raise ConfigError(f"this reads PostgreSQL only, not {u.get_backend_name()}")
    parts = {
        "host": u.host or "localhost",
        "port": str(u.port or 5432),
        "user": u.username or "",
        "dbname": u.database or "",
        "password": u.password or "",
        "options": SESSION_OPTIONS if replication else "",
    }
    for key, value in u.query.items():
        parts.setdefault(key, value if isinstance(value, str) else value[0])

    def q(v: str) -> str:
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"

    return " ".join(f"{k}={q(v)}" for k, v in parts.items() if v)
