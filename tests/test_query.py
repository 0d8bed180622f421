"""``cdc-backfill state``: the reconciled state read as a user does (DuckDB over the current versions)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cdc_backfill import query
from cdc_backfill.cli import main
from tests.support.state import write_state


def write_legacy_state(state: Path, collection: str, rows: list[dict], version: int = 1) -> None:
    """A state folder as reconciles wrote it before Delta: a version, the ``current`` link, the log."""
    folder = state / collection
    target = folder / f"v{version:06d}"
    target.mkdir(parents=True)
    table = pa.Table.from_pylist([{**r, "_cdc_position": [1, 2], "_cdc_unknown": []} for r in rows])
    pq.write_table(table, target / "part-0.parquet")
    (target / "_cdc_meta.json").write_text(
        json.dumps({"position": [1, 2], "judged_chunks": ["c1"], "key": ["email"]})
    )
    link = folder / "current"
    if link.is_symlink():
        link.unlink()
    os.symlink(target.name, link)
    log = [{"version": version, "rows": len(rows), "position": [1, 2], "rows_with_unknown_columns": 0}]
    (folder / "_log.json").write_text(json.dumps(log))


@pytest.fixture
def state(tmp_path: Path) -> Path:
    root = tmp_path / "state"
    write_state(
        root,
        "public.customers",
        [{"email": f"u{i}@x", "tier": "gold" if i % 2 else "silver"} for i in range(5)],
    )
    write_state(root, "public.order_lines", [{"order_id": 1, "line_no": n} for n in range(3)])
    write_state(root, "audit.customers", [{"email": "a@x", "tier": "gold"}])
    (root / "_runs").mkdir()
    return root


def test_view_names_add_the_table_name_only_where_it_is_unique() -> None:
    names = query.view_names(["public.customers", "audit.customers", "public.order_lines"])
    assert names == {
        "public.customers": ["public.customers"],
        "audit.customers": ["audit.customers"],
        "public.order_lines": ["public.order_lines", "order_lines"],
    }


def test_view_sql_hides_the_bookkeeping_columns() -> None:
    sql = query.view_sql("public.o'x", "_cdc_version_0", ["id", "_cdc_position", "_cdc_unknown"], "o")
    assert sql == 'CREATE VIEW "o" AS SELECT * EXCLUDE (_cdc_position, _cdc_unknown) FROM "_cdc_version_0"'
    # a table another writer made, without them: nothing to leave out
    assert query.view_sql("s.t", "v", ["id"]) == 'CREATE VIEW "s.t" AS SELECT * FROM "v"'


def test_describe_lists_every_collection_with_a_current_version(state: Path) -> None:
    result = query.describe(state)
    assert [r[0] for r in result.rows] == ["audit.customers", "public.customers", "public.order_lines"]
    assert result.rows[1][1:3] == (5, 0)


def test_sql_over_full_and_short_names(state: Path) -> None:
    got = query.run_sql(state, 'SELECT tier, count(*) FROM "public.customers" GROUP BY 1 ORDER BY 1')
    assert got.columns == ["tier", "count_star()"] and got.rows == [("gold", 2), ("silver", 3)]
    assert query.run_sql(state, "SELECT count(*) FROM order_lines").rows == [(3,)]
    assert "_cdc_position" not in query.show(state, "public.customers").columns


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--state", "nowhere"], "no state folder at nowhere"),
        (["--state", "{state}", "public.nope"], "no state for public.nope in"),
        (["--state", "{state}", "--sql", "SELEC 1"], "the query failed: Parser Error"),
        (["--state", "{state}", "--sql", "SELECT * FROM customers"], "the query failed"),  # not unique
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    state: Path,
    args: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(state.parent)
    assert main(["state", *[a.format(state=state) for a in args]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cdc-backfill state: ") and message in err and err.count("\n") == 1


def test_cli_shows_rows_as_a_table_or_json(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["state", "--state", str(state), "public.order_lines", "--limit", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["order_id", "line_no"] and lines[-1] == "(2 rows)"
    assert (
        main(
            ["state", "--state", str(state), "--sql", "SELECT max(line_no) AS top FROM order_lines", "--json"]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out) == {"top": 2}


def test_render_cuts_long_values() -> None:
    text = query.render(query.Result(["v"], [("x" * 50,), (None,)]), width=10)
    assert text.splitlines()[2] == "x" * 9 + "…" and text.splitlines()[3] == "NULL"


def test_sql_reads_only_one_select(state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "written.csv"
    for sql, kind in ((f"COPY (SELECT 1) TO '{target}'", "COPY"), ("SELECT 1; SELECT 2", "SELECT, SELECT")):
        assert main(["state", "--state", str(state), "--sql", sql]) == 2
        assert f"--sql takes one SELECT query, not {kind}" in capsys.readouterr().err
    assert not target.exists()
    # the bookkeeping columns, where asked for, as the reconcile guide shows
    sql = "SELECT count(*) AS n FROM customers WHERE len(_cdc_unknown) = 0"
    assert (
        main(
            [
                "state",
                "--state",
                str(state),
                "--all-columns",
                "--sql",
                sql.replace("customers", "order_lines"),
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["n"] == 3


def test_a_closed_pipe_ends_quietly(state: Path) -> None:
    import subprocess
    import sys

    cmd = f"{sys.executable} -m cdc_backfill.cli state --state {state} public.customers --json | head -c 1"
    res = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert "Traceback" not in res.stderr and "BrokenPipe" not in res.stderr, res.stderr


def test_versions_history_and_time_travel(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import time

    before = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 1)) + "Z"
    time.sleep(1.1)
    write_state(state, "public.order_lines", [{"order_id": 1, "line_no": n} for n in range(7)])
    assert main(["state", "--state", str(state), "public.order_lines", "--history", "--json"]) == 0
    history = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(h["version"], h["rows"]) for h in history] == [(0, 3), (1, 7)]
    count = "SELECT count(*) AS n FROM order_lines"
    for args, n in ((["--version", "0"], 3), ([], 7), (["--as-of", before], None)):
        code = main(
            [
                "state",
                "--state",
                str(state),
                "--sql",
                count,
                "--json",
                *args,
                *(["public.order_lines"] if args[:1] == ["--version"] else []),
            ]
        )
        out, err = capsys.readouterr()
        if n is None:  # no collection had a state yet then
            assert code == 2 and "no collection of" in err and "had a state yet at" in err, err
        else:
            assert code == 0 and json.loads(out)["n"] == n, (out, err)
    assert main(["state", "--state", str(state), "public.order_lines", "--version", "9"]) == 2
    assert "public.order_lines has versions 0 to 1: there is no version 9" in capsys.readouterr().err
    assert main(["state", "--state", str(state), "--as-of", "yesterday"]) == 2
    assert "not a time: 'yesterday'" in capsys.readouterr().err


def test_the_folder_format_before_delta_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_legacy_state(Path("state"), "public.customers", [{"email": "a@x", "tier": "gold"}], version=1)
    for args in (["state", "--state", "state"], ["state", "--state", "state", "public.customers"]):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert "folder format of releases before Delta tables" in err and err.count("\n") == 1, err
        assert "reconcile into a new --state folder" in err
