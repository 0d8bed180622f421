"""A source that refuses for lack of a setting or a privilege: one line naming the statement that
fixes it, exit 2; run as printed, each statement lets the command go further, until it succeeds."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from cdc_backfill.doctor import check_postgres
from cdc_backfill.pg.refusals import source_refusal
from tests.support.cli import cli, ok
from tests.support.pg import plain_url, sql


class PgError(Exception):
    """Stands for psycopg2's errors: a message and its SQLSTATE."""

    def __init__(self, message: str, pgcode: str | None) -> None:
        super().__init__(message)
        self.pgcode = pgcode


def test_each_refusal_names_its_fix() -> None:
    url = "postgresql://cdc:secret@h/shop"
    wal = PgError("logical decoding requires wal_level >= logical", "55000")
    assert str(source_refusal(wal, url)) == (
        "the source cannot stream changes: logical decoding requires wal_level >= logical: run ALTER SYSTEM "
        "SET wal_level = logical; as a superuser, then restart the server"
    )
    walsender = PgError(
        'connection to server at "h", port 5432 failed: FATAL:  must be superuser or replication role to start '
        "walsender",
        None,
    )
    assert source_refusal(walsender, url).fix == "run ALTER ROLE cdc REPLICATION; as a superuser"  # type: ignore[union-attr]
    table = PgError("permission denied for table cdc_signal", "42501")
    assert str(source_refusal(table, None)) == (
        "the role <role> may not use the table cdc_signal: run GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE "
        "cdc_signal TO <role>; as its owner"
    )
    # not a refusal: a server that cannot be reached, a syntax error
    assert (
        source_refusal(PgError('connection to server at "h" failed: Connection refused', None), url) is None
    )
    assert source_refusal(PgError('syntax error at or near "x"', "42601"), url) is None


def fixes(line: str) -> list[str]:
    """The statements a refusal prints (``run <statement>; as ...``)."""
    return re.findall(r"run ((?:ALTER|GRANT|CREATE) [^;]+;)", line)


@pytest.mark.pg
@pytest.mark.slow
def test_a_role_without_privileges_is_told_each_grant_until_the_command_runs(
    fresh_db: str, tmp_path: Path
) -> None:
    role = f"r_{uuid.uuid4().hex[:8]}"
    sql(fresh_db, f"CREATE ROLE {role} LOGIN", "CREATE TABLE orders (id int PRIMARY KEY, status text)",
        "INSERT INTO orders SELECT i, 'new' FROM generate_series(1, 10) i")  # fmt: skip
    ok(cli(tmp_path, "signal", "init", "--source", plain_url(fresh_db)))  # as the owner
    as_role = re.sub(r"://[^@/]*@", f"://{role}@", plain_url(fresh_db))
    try:
        # the doctor names the same fix for the role before anything is tried
        check = check_postgres(as_role)
        assert not check.ok and check.fix == f"run ALTER ROLE {role} REPLICATION; as a superuser", check
        for command in (
            ["signal", "execute-snapshot", "--collections", r"public\.orders"],
            ["capture", "postgres", "--landing", "lake", "--drain"],
        ):
            said = []
            for _ in range(6):
                res = cli(tmp_path, *command, "--source", as_role)
                if res.returncode == 0:
                    break
                line = res.stderr.strip()
                assert res.returncode == 2 and line.count("\n") == 0 and "Traceback" not in line, res.stderr
                assert fixes(line), line
                said.append(line)
                sql(fresh_db, *fixes(line))  # as printed, by the owner
            assert res.returncode == 0, (command, said, res.stderr)
            assert said, command  # the role lacked something for each command
    finally:
        sql(fresh_db, f"REASSIGN OWNED BY {role} TO CURRENT_USER", f"DROP OWNED BY {role}")
        sql(fresh_db.rsplit("/", 1)[0] + "/postgres", f"DROP ROLE IF EXISTS {role}")
