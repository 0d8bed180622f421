"""What a PostgreSQL source refused for lack of a setting or a privilege, said in one line with the
statement that fixes it (pure: from the server's SQLSTATE and first line, tested with the errors users
meet). The CLI and the doctor say the same; a server that cannot be reached is not a refusal."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

INSUFFICIENT_PRIVILEGE = "42501"
# what each command needs of an object it was refused (the signal tables are read and written; a schema
# gets the signal tables; the database gets the capture's publication)
GRANTS = {"table": "SELECT, INSERT, UPDATE, DELETE", "schema": "USAGE, CREATE", "database": "CREATE",
          "sequence": "USAGE, SELECT"}  # fmt: skip


@dataclass(frozen=True)
class Refusal:
    """What the server refused (``what``, its own words included) and the statement that fixes it."""

    what: str
    fix: str

    def __str__(self) -> str:
        return f"{self.what}: {self.fix}"


def source_refusal(exc: BaseException, source: str | None = None) -> Refusal | None:
    """The refusal ``exc`` reports, or None when it is none; ``source``: the URL used, for its role's
    name (``<role>`` when unknown)."""
    code = getattr(getattr(exc, "orig", None) or exc, "pgcode", None)
    first = server_message(exc)
    role = role_of(source)
    if "wal_level" in first and "logical" in first:
        return Refusal(
            f"the source cannot stream changes: {first}",
            "run ALTER SYSTEM SET wal_level = logical; as a superuser, then restart the server",
        )
    if "replication" in first and ("superuser" in first or "permission denied" in first):
        return Refusal(
            f"the role {role} may not use replication: {first}",
            f"run ALTER ROLE {role} REPLICATION; as a superuser",
        )
    if code != INSUFFICIENT_PRIVILEGE:
        return None
    denied = re.search(r"permission denied for (table|relation|schema|database|sequence) (\S+)", first)
    if denied:
        kind, name = ("table" if denied[1] == "relation" else denied[1]), denied[2]
        return Refusal(
            f"the role {role} may not use the {kind} {name}",
            f"run GRANT {GRANTS[kind]} ON {kind.upper()} {name} TO {role}; as its owner",
        )
    owner = re.search(r"must be owner of (?:table|relation) (\S+)", first)
    if owner:
        return Refusal(
            f"only the owner of {owner[1]} (or a superuser) may do this: {first}",
            f"run ALTER TABLE {owner[1]} OWNER TO {role}; as its owner, or run the command as that role",
        )
    return Refusal(f"the role {role} was refused: {first}", "grant it what the message names, as a superuser")


def server_message(exc: BaseException) -> str:
    """The server's own first line of ``exc`` (SQLAlchemy's wrapper and libpq's ``connection ... failed:
    FATAL:`` prefix left out)."""
    first = (str(getattr(exc, "orig", None) or exc).strip().splitlines() or [""])[0]
    return re.split(r"\b(?:FATAL|ERROR):\s+", first)[-1].strip()


def role_of(source: str | None) -> str:
    """The user of a database URL, ``<role>`` when there is none to read."""
    try:
        return (make_url(source).username if source else None) or "<role>"
    except ArgumentError:
        return "<role>"
