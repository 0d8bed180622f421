from __future__ import annotations

from pathlib import Path

import psycopg2
import pytest
import sqlalchemy as sa

from cdc_backfill.pg.checks import check_logical_decoding
from cdc_backfill.pg.embedded import EmbeddedPostgres, server_options

pytestmark = pytest.mark.pg


def test_server_options_switch_on_logical_decoding(tmp_path: Path) -> None:
    opts = server_options(5433, tmp_path, {"fsync": "off", "max_wal_senders": "4"})
    assert "-c wal_level=logical" in opts
    assert "-c listen_addresses=127.0.0.1" in opts
    assert "-c port=5433" in opts
    assert "-c fsync=off" in opts
    # a caller's setting overrides the default rather than being added twice
    assert [o for o in opts if "max_wal_senders" in o] == ["-c max_wal_senders=4"]


def test_server_is_ready_for_logical_decoding(pg_url: str) -> None:
    ready = check_logical_decoding(pg_url)
    assert ready.wal_level == "logical"
    assert ready.slot_roundtrip
    assert ready.ok


def test_pgoutput_slot_sees_a_committed_change(pg_server) -> None:  # type: ignore[no-untyped-def]
    """The real thing: a change committed after the slot exists is decoded from the WAL by pgoutput."""
    engine = sa.create_engine(pg_server.url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text("CREATE TABLE harness_probe (id int PRIMARY KEY, v text)"))
        conn.execute(sa.text("CREATE PUBLICATION harness_pub FOR TABLE harness_probe"))
        conn.execute(sa.text("SELECT pg_create_logical_replication_slot('harness_slot', 'pgoutput')"))
        try:
            conn.execute(sa.text("INSERT INTO harness_probe VALUES (1, 'one')"))
            rows = conn.execute(
                sa.text(
                    "SELECT data FROM pg_logical_slot_get_binary_changes('harness_slot', NULL, NULL, "
                    "'proto_version', '1', 'publication_names', 'harness_pub')"
                )
            ).all()
            kinds = [bytes(r.data)[:1] for r in rows]
            assert b"B" in kinds
            assert b"I" in kinds
            assert b"C" in kinds
            insert = next(bytes(r.data) for r in rows if bytes(r.data)[:1] == b"I")
            assert b"one" in insert
        finally:
            conn.execute(sa.text("SELECT pg_drop_replication_slot('harness_slot')"))
            conn.execute(sa.text("DROP PUBLICATION harness_pub"))
            conn.execute(sa.text("DROP TABLE harness_probe"))
    engine.dispose()
    # and a psycopg2 replication-capable connection opens with the libpq string
    with psycopg2.connect(pg_server.dsn) as raw:
        assert raw.server_version >= 150000


def test_a_kept_data_dir_survives_a_restart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a relative folder, as `make demo` gives it: the server's programs run from "/" (as root, under
    # another user), so it must be made absolute before they see it
    monkeypatch.chdir(tmp_path)
    base = Path("pg")
    with EmbeddedPostgres(base) as pg:
        eng = sa.create_engine(pg.url)
        with eng.begin() as conn:
            conn.execute(sa.text("CREATE TABLE kept (id int)"))
        eng.dispose()
    assert (base / "data" / "PG_VERSION").exists()
    with EmbeddedPostgres(base) as pg:
        eng = sa.create_engine(pg.url)
        with eng.connect() as conn:
            assert conn.execute(sa.text("SELECT to_regclass('kept') IS NOT NULL")).scalar_one()
            assert conn.execute(sa.text("SHOW wal_level")).scalar_one() == "logical"
        eng.dispose()
