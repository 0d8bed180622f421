"""No traceback reaches a user from bad input: one line, a non-zero exit (``-v`` shows the traceback)."""

from __future__ import annotations

import pytest

from cdc_backfill.cli import error_line, error_status, is_summary_line, main
from cdc_backfill.config import ConfigError
from cdc_backfill.storage import StorageError
from tests.support.cli import cli
from tests.support.output import spark_info_lines
from tests.support.pg import plain_url
from tests.support.state import write_state


class OperationalError(Exception):
    """Stands for SQLAlchemy's and psycopg2's, which the CLI tells apart by name."""


def test_error_lines() -> None:
    assert error_line(ConfigError("unsupported database URL scheme 'x://'")) == (
        "unsupported database URL scheme 'x://'"
    )
    unreachable = OperationalError(
        '(psycopg2.OperationalError) connection to server at "h" (1.2.3.4), port 1 failed: refused\n'
        "\tIs the server running on that host?\n(Background on this error at: https://sqlalche.me/e/20/e3q8)"
    )
    assert error_line(unreachable) == (
        'cannot reach the source: connection to server at "h" (1.2.3.4), port 1 failed: refused '
        "(check the URL, the server and the network)"
    )
    assert error_line(KeyError("postgresql://u:pw@h/db")) == (
        "KeyError: 'postgresql://u:***@h/db' (run with -v for the details)"
    )
    assert [error_status(e) for e in (ConfigError("x"), unreachable, KeyError("k"))] == [2, 3, 1]
    # pyarrow's S3 filesystem, the S3 server down (as measured against moto's, stopped)
    store = OSError(
        "When getting information for key 's' in bucket 'b': AWS Error NETWORK_CONNECTION during "
        "HeadObject operation: curlCode: 7, Could not connect to server"
    )
    assert error_line(store).startswith("cannot reach the lake on S3: When getting information for key 's'")
    assert error_line(store).endswith("(check AWS_ENDPOINT_URL, the credentials, the bucket and the network)")
    assert error_status(store) == 3 and error_status(StorageError("s4://")) == 2


def test_a_bad_url_in_the_environment_stops_every_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CDC_BACKFILL_SOURCE_URL", "mysql+nodriver://u:secret@h/db")
    assert main(["snapshot", "status"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cdc-backfill snapshot: the database driver 'nodriver'")
    assert "(from CDC_BACKFILL_SOURCE_URL)" in err and "secret" not in err and err.count("\n") == 1


def test_verbose_shows_the_traceback_and_keeps_the_exit_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CDC_BACKFILL_SOURCE_URL", "nope://h")
    # -v asks Spark for its INFO log in the processes it starts: not beyond this test
    monkeypatch.setenv("CDC_BACKFILL_SPARK_LOG_LEVEL", "WARN")
    assert main(["-v", "snapshot", "status"]) == 2  # bad input, as without -v
    err = capsys.readouterr().err
    assert "Traceback" in err and "ConfigError" in err
    assert err.rstrip().splitlines()[-1].startswith("cdc-backfill snapshot: unsupported database URL")


@pytest.mark.pg
@pytest.mark.parametrize(
    "command",
    [
        ("signal", "list"),
        ("signal", "pause-snapshot"),
        ("snapshot", "status"),
        ("snapshot", "run", "--once", "--landing", "lake"),
    ],
)
def test_a_source_without_the_signal_tables_is_told_to_run_signal_init(
    fresh_db: str, tmp_path, command: tuple[str, ...]
) -> None:  # type: ignore[no-untyped-def]
    url = plain_url(fresh_db)
    res = cli(tmp_path, *command, "--source", url)
    assert res.returncode == 2, (res.stdout, res.stderr)
    line = res.stderr.strip()
    assert "\n" not in line and "Traceback" not in line and "ProgrammingError" not in line, line
    assert line.endswith("table: run `cdc-backfill signal init` on this source first"), line


def test_the_reconcile_summary_is_told_from_its_step_lines() -> None:
    assert is_summary_line('{"events": 3, "quarantined": 0, "collections": {}}\n')
    assert not is_summary_line("21:12:33 reading 1 new stream files\n")
    assert not is_summary_line('{"something": "else"}\n')
    assert not is_summary_line("{not json\n")


def test_spark_info_lines_are_told_from_the_project_steps() -> None:
    text = "25/11/23 21:12:33 INFO BlockManager: stored\n21:12:33 public.t: merging\n21:12:34 WARN Utils: x\n"
    assert spark_info_lines(text) == ["25/11/23 21:12:33 INFO BlockManager: stored"]


def test_typos_in_names_are_refused_before_any_work(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["events", "parse", str(tmp_path / "nope.json")]) == 2
    assert capsys.readouterr().err.strip() == f"cdc-backfill events: no such file: {tmp_path / 'nope.json'}"

    (tmp_path / "lake" / "snapshots" / "public.orders").mkdir(parents=True)
    (tmp_path / "lake" / "snapshots" / "public.orders" / "c.parquet").write_bytes(b"")
    code = main(["reconcile", "--landing", str(tmp_path / "lake"), "--state", str(tmp_path / "state"),
                 "--collections", "public.ordres"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "public.ordres (did you mean public.orders?)" in err and err.count("\n") == 1, err
    assert not (tmp_path / "state").exists()

    write_state(tmp_path / "state", "public.orders", [{"id": 1}])
    code = main(["verify", "--source", "postgresql://u@127.0.0.1:1/db", "--state", str(tmp_path / "state"),
                 "--collection", "public.ordrs"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "has no collection public.ordrs: did you mean public.orders?" in err, err


def test_verify_refuses_a_source_it_cannot_read(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Verify's range counts and hashes are PostgreSQL SQL: a SQL Server source is refused in one line
    before anything is read, not failed on with SQL it does not speak."""
    write_state(tmp_path / "state", "dbo.orders", [{"id": 1}])
    code = main(["verify", "--source", "mssql://sa:x@127.0.0.1:1/cdc", "--state", str(tmp_path / "state"),
                 "--collection", "dbo.orders"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and err == "cannot verify: verify reads PostgreSQL sources only, not a mssql source\n", (
        err
    )


def test_a_job_that_ran_out_of_heap_ends_with_what_to_do(capsys) -> None:  # type: ignore[no-untyped-def]
    """As `cdc-backfill ingest` of 50 MB files did in a 1g driver: Spark's traces, exit 52, then the one
    line that says what to do."""
    import os
    import sys

    from cdc_backfill.cli.reconcile import OUT_OF_MEMORY_HINT, submit_and_relay

    job = "import sys; print('20:11:48 ERROR Executor: Exception in task 3.0 in stage 0.0 (TID 3)'); " \
          "print('java.lang.OutOfMemoryError: Java heap space'); print('\tat java.base/x'); sys.exit({})"  # fmt: skip
    assert submit_and_relay([sys.executable, "-c", job.format(52)], dict(os.environ)) == 52
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == OUT_OF_MEMORY_HINT and "SPARK_DRIVER_MEMORY=4g" in OUT_OF_MEMORY_HINT
    assert "Java heap space" in err  # Spark's own lines stay above it
    assert submit_and_relay([sys.executable, "-c", job.format(0)], dict(os.environ)) == 0  # a task retried
    assert OUT_OF_MEMORY_HINT not in capsys.readouterr().err
