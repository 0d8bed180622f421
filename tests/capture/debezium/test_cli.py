"""``cdc-backfill capture debezium`` as a user types it (a plain ``postgresql://`` URL, a relative landing
folder), the command it prints run as printed, and every way it is refused or fails: one line, a non-zero
exit, no traceback. In-process: a batch landed but not committed when the run died is delivered again
and skipped, and a source that goes away mid-run ends the run with Debezium's reason."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from cdc_backfill.capture.debezium import connector as capture_module
from cdc_backfill.capture.debezium.batch_files import record_identity
from cdc_backfill.capture.debezium.connector import DebeziumCapture, DebeziumCaptureError
from cdc_backfill.signals.store import SignalStore
from tests.support.cli import cli
from tests.support.debezium import dbz_drain, landed_records, require_engine, settings
from tests.support.pg import plain_url, sql

pytestmark = [pytest.mark.pg, pytest.mark.debezium]


def one_line_refusal(res: subprocess.CompletedProcess[str], code: int, *words: str) -> None:
    err = res.stderr.strip()
    assert res.returncode == code, (res.returncode, res.stdout, err)
    assert "Traceback" not in err and "Exception" not in err, err
    last = err.splitlines()[-1]
    for w in words:
        assert w in last, last


def drain_args(url: str, landing: str) -> list[str]:
    """``capture debezium`` of public.t, drained, as a user types it."""
    return [
        "capture",
        "debezium",
        "--source",
        url,
        "--landing",
        landing,
        "--collections",
        "public.t",
        "--drain",
    ]


@pytest.fixture
def table(fresh_db: str) -> str:
    sql(
        fresh_db,
        "CREATE TABLE t (id int PRIMARY KEY, v text)",
        "INSERT INTO t SELECT i, 'v' || i FROM generate_series(1, 20) i",
    )
    SignalStore(fresh_db).init()
    return fresh_db


@pytest.mark.slow
def test_drain_as_typed_then_the_printed_ingest(table: str, tmp_path: Path) -> None:
    require_engine()
    url = plain_url(table)
    args = drain_args(url, "lake")
    first = cli(tmp_path, *args)
    assert first.returncode == 0, first.stderr
    sql(table, "UPDATE t SET v = 'changed' WHERE id < 5", "DELETE FROM t WHERE id = 20")
    again = cli(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    # one file or more: how many batches Debezium hands over depends on its timing, not on what it lands
    assert re.search(r"^\d+ records landed in \d+ files$", again.stdout, re.M), again.stdout
    ops = [d["value"]["payload"]["op"] for d in landed_records(tmp_path / "lake") if d["value"]]
    assert ops.count("u") == 4 and ops.count("d") == 1, ops  # beside the drain markers (op m)
    printed = again.stdout.strip().splitlines()[-1]
    assert printed == "next: cdc-backfill ingest --landing lake"
    ingest = cli(tmp_path, *shlex.split(printed.removeprefix("next: "))[1:])
    assert ingest.returncode == 0, ingest.stderr
    status = cli(tmp_path, "capture", "debezium", "status", "--landing", "lake", "--source", url)
    assert status.returncode == 0, status.stderr
    assert "files to ingest: 0" in status.stdout and "slot active: False" in status.stdout, status.stdout


@pytest.mark.slow
def test_a_landing_on_s3_keeps_debeziums_offsets_there(  # type: ignore[no-untyped-def]
    table: str, s3_lake, tmp_path: Path
) -> None:
    """The engine's offsets live in the landing on S3, not on the machine: a second run with this
    machine's copy gone goes on where the first stopped, nothing landed twice; the printed ingest runs."""
    from cdc_backfill.capture.debezium.settings import local_copy
    from cdc_backfill.landing.layout import debezium_dir

    require_engine()
    url, landing = plain_url(table), f"{s3_lake}/landing"
    args = drain_args(url, landing)
    first = cli(tmp_path, *args)
    assert first.returncode == 0, first.stderr
    stored = [p for p in debezium_dir(s3_lake / "landing").iterdir() if p.suffix == ".offsets"]
    assert len(stored) == 1, stored
    shutil.rmtree(local_copy(stored[0]).parent)  # the next run as on another machine
    sql(table, "UPDATE t SET v = 'changed' WHERE id < 5", "DELETE FROM t WHERE id = 20")
    again = cli(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    records = landed_records(s3_lake / "landing")
    seen = [record_identity(d.get("key"), d.get("value")) for d in records]
    assert len(seen) == len(set(seen)), "a record landed twice"
    ops = [d["value"]["payload"]["op"] for d in records if d["value"]]
    assert ops.count("u") == 4 and ops.count("d") == 1, ops
    printed = again.stdout.strip().splitlines()[-1]
    assert printed == f"next: cdc-backfill ingest --landing {landing}"
    ingest = cli(tmp_path, *shlex.split(printed.removeprefix("next: "))[1:])
    assert ingest.returncode == 0, ingest.stderr
    assert not list(tmp_path.iterdir())  # nothing beside the user


@pytest.mark.parametrize(
    ("extra", "code", "words"),
    [
        (["--signal-table", "app.public.cdc_signal"], 2, ("schema.table", "silently ignored")),
        (["--signal-table", "public.no_such"], 2, ("does not exist", "signal init")),
        (["--collections", "public.nope"], 2, ("no table public.nope",)),
        (["--property", "snapshot.mode"], 2, ("KEY=VALUE",)),
        (["--watermarking", "insert_update"], 2, ("invalid choice",)),
    ],
)
def test_bad_configurations_are_refused_in_one_line(
    table: str, tmp_path: Path, extra: list[str], code: int, words: tuple[str, ...]
) -> None:
    args = ["capture", "debezium", "--source", plain_url(table), "--landing", "lake", "--drain", *extra]
    one_line_refusal(cli(tmp_path, *args, timeout=120), code, *words)
    assert not (tmp_path / "lake" / "stream").exists()


def test_an_unreachable_source_is_refused_in_one_line(tmp_path: Path) -> None:
    args = [
        "capture",
        "debezium",
        "--source",
        "postgresql://cdc@127.0.0.1:1/app",
        "--landing",
        "lake",
        "--drain",
    ]
    one_line_refusal(cli(tmp_path, *args, timeout=120), 2, "cannot reach", "127.0.0.1:1")


def test_drain_of_a_source_without_logical_decoding_messages_is_refused(tmp_path: Path) -> None:
    args = ["capture", "debezium", "--source", "mssql://sa:pw@127.0.0.1:1/cdc", "--landing", "lake",
            "--signal-table", "dbo.cdc_signal", "--drain"]  # fmt: skip
    one_line_refusal(cli(tmp_path, *args, timeout=120), 2, "--follow")


def test_a_lost_slot_is_refused_not_silently_recreated(table: str, tmp_path: Path) -> None:
    require_engine()
    landing = tmp_path / "lake"
    dbz_drain(table, settings(table, landing, ("public.t",)))
    sql(table, "SELECT pg_drop_replication_slot('cdc_backfill_debezium')")
    args = ["capture", "debezium", "--source", plain_url(table), "--landing", "lake", "--drain"]
    one_line_refusal(cli(tmp_path, *args, timeout=120), 2, "slot cdc_backfill_debezium is gone", "lost")


def test_a_batch_landed_but_not_committed_is_not_landed_twice(
    table: str, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    require_engine()
    landing = tmp_path / "lake"
    s = settings(table, landing, ("public.t",))
    dbz_drain(table, s)
    land = capture_module.land_batch

    def land_then_die(*a, **kw):  # type: ignore[no-untyped-def]
        path, data = land(*a, **kw)
        if path is not None:
            raise OSError("disk gone after the rename (a crash before the commit)")
        return path, data

    monkeypatch.setattr(capture_module, "land_batch", land_then_die)
    sql(table, "UPDATE t SET v = 'x' || id")
    with pytest.raises(DebeziumCaptureError, match="landing a batch failed: disk gone"):
        dbz_drain(table, s)
    monkeypatch.setattr(capture_module, "land_batch", land)
    again = dbz_drain(table, s)
    assert again.redelivered >= 1  # the batch that died, delivered again from the stored offsets
    seen = [record_identity(d.get("key"), d.get("value")) for d in landed_records(landing)]
    assert len(seen) == len(set(seen)), "a record landed twice"
    assert sum('"op":"u"' in i for i in seen) == 20


def test_a_source_that_goes_away_mid_run_ends_it_with_the_reason(table: str, tmp_path: Path) -> None:
    require_engine()
    s = settings(
        table,
        tmp_path / "lake",
        ("public.t",),
        extra={"retriable.restart.connector.wait.ms": "200", "errors.max.retries": "1"},
    )
    cap = DebeziumCapture(s)
    out: list[object] = []

    def run() -> None:
        try:
            out.append(cap.run(drain=False))
        except DebeziumCaptureError as exc:
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    admin = sa.create_engine(table.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    name = table.rsplit("/", 1)[1]
    with admin.connect() as conn:
        for _ in range(300):
            if conn.execute(
                sa.text("SELECT count(*) FROM pg_replication_slots WHERE active AND database = :d"),
                {"d": name},
            ).scalar():
                break
            time.sleep(0.1)
        # the source goes away: it takes no new connection, and the connector's are cut
        conn.execute(sa.text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false'))
        conn.execute(
            sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :d"), {"d": name}
        )
    admin.dispose()
    thread.join(120)
    assert out and isinstance(out[0], DebeziumCaptureError), out
    # the reason, whichever way the connector met the source's end: its connection cut (while its task
    # was still starting, under load), or its retry refused
    reasons = ("not currently accepting connections", "terminating connection due to administrator command")
    assert "stopped on its own" in str(out[0]) and any(r in str(out[0]) for r in reasons), out[0]
