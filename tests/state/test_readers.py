"""The commands that read the state from other tools (docs/guides/reconcile-and-verify.md), run as
printed in a folder holding a state: pandas, Polars, DuckDB and Spark each read the version the Delta
log names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cdc_backfill.runtime import project_root
from tests.support.cli import as_printed
from tests.support.state import write_state


def guide_reader_commands() -> list[str]:
    text = (project_root() / "docs" / "guides" / "reconcile-and-verify.md").read_text()
    block = text[text.index("- **Reading the state.**") :]
    block = block[block.index("```sh") : block.index("```", block.index("```sh") + 5)]
    return [line.strip() for line in block.splitlines() if line.strip().startswith("python -c")]


def test_the_guide_names_a_reader_for_each_tool() -> None:
    commands = guide_reader_commands()
    assert [re.search(r"(pandas|polars|duckdb|pyspark)", c).group(1) for c in commands] == [  # type: ignore[union-attr]
        "pandas", "polars", "duckdb", "pyspark",
    ]  # fmt: skip


@pytest.mark.spark
@pytest.mark.slow
def test_each_guide_reader_reads_the_current_version_as_printed(tmp_path: Path) -> None:
    write_state(tmp_path / "state", "public.orders", [{"id": i, "status": "old"} for i in range(5)])
    write_state(tmp_path / "state", "public.orders", [{"id": i, "status": "new"} for i in range(3)])
    for command in guide_reader_commands():
        res = as_printed(tmp_path, command, timeout=300)
        assert res.returncode == 0, (command, res.stderr[-2000:])
        # the current version only: three rows, all 'new' (the replaced file's rows are not read)
        assert "new" in res.stdout and "old" not in res.stdout, (command, res.stdout)
