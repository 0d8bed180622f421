"""The documentation keeps up with the code: every setting the package reads is in the configuration
reference (docs/reference/configuration.md), and docs/ builds as a site with MkDocs' strict checks."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.support.docs import command_of

REFERENCE = ROOT / "docs" / "reference" / "configuration.md"
PACKAGE = ROOT / "plugins" / "cdc_backfill"


def read_in_code() -> set[str]:
    """Every ``CDC_BACKFILL_*`` name the package's code holds."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        names |= set(re.findall(r"\bCDC_BACKFILL_[A-Z0-9_]*[A-Z0-9]\b", path.read_text()))
    return names


def test_every_variable_the_code_reads_is_in_the_reference() -> None:
    text = REFERENCE.read_text()
    missing = sorted(n for n in read_in_code() if f"`{n}`" not in text)
    assert missing == [], f"add them to {REFERENCE.relative_to(ROOT)}"
    assert "CDC_BACKFILL_SOURCE_URL" in read_in_code()  # the search finds what it must


def test_every_key_of_the_config_and_schedules_files_is_in_the_reference() -> None:
    from cdc_backfill.airflow import schedules

    text = REFERENCE.read_text()
    keys = {f"`{k}`" for k in schedules.KNOWN_KEYS} | {"`[source] url`", "`[lake] landing`", "`[lake] state`"}
    assert sorted(k for k in keys if k not in text) == []
    config = (PACKAGE / "config.py").read_text() + (PACKAGE / "airflow" / "defaults.py").read_text()
    # the config file's keys the code reads: [source] url, [lake] landing and state
    assert re.search(r'get\("source"\)', config) and re.search(r'get\("lake"\)', config)
    assert re.search(r'_from_config\("landing"\)', config) and re.search(r'_from_config\("state"\)', config)


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


def test_the_site_builds_strict(tmp_path: Path) -> None:
    """docs/ as a site (mkdocs.yml): a broken link, a page left out of the navigation or a bad anchor
    fails the build."""
    res = mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert res.returncode == 0, res.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "configuration" / "index.html").is_file()
    # the check can fail: the same build over a page that links to one that does not exist
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# x\n\n[gone](nowhere.md)\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: x\ndocs_dir: docs\ntheme:\n  name: material\n")
    assert mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site2").returncode != 0


def test_the_cli_reference_is_what_the_parsers_print() -> None:
    from cdc_backfill.cli.reference import cli_reference

    page = (ROOT / "docs" / "reference" / "cli.md").read_text()
    assert page == cli_reference() + "\n", "python -m cdc_backfill.cli.reference > docs/reference/cli.md"
    assert "## `cdc-backfill reconcile`" in page and "--landing" in page


def documented_commands() -> list[tuple[str, str]]:
    """(page, line) for every ``cdc-backfill`` command in a shell block of the README and docs/."""
    out = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for block in re.findall(r"```(?:bash|sh|console)\n(.*?)```", page.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():  # a command continued on the next line
                for part in command_of(line).split(";"):  # commands, their comments left out
                    command = part.strip().removeprefix("$ ")
                    if command.startswith(("cdc-backfill ", ".venv/bin/cdc-backfill ")):
                        out.append((str(page.relative_to(ROOT)), command))
    return out


def test_every_command_the_docs_show_parses_as_written() -> None:
    """What the command line accepts, for every `cdc-backfill` line of the docs (a placeholder `...` is
    a URL, `[--flag]` an option shown as optional): a renamed option or a typo fails here."""
    from cdc_backfill.cli.main import build_parser

    commands = documented_commands()
    assert len(commands) > 20, commands  # the search finds them
    wrong = []
    for page, command in commands:
        text = re.sub(r"\[(--[^\]]+)\]", r"\1", command).replace(" ... ", " postgresql://u@h/db ")
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                build_parser().parse_args(shlex.split(text)[1:])
        except SystemExit as exc:  # --help exits 0; a wrong argument 2
            if exc.code != 0:
                wrong.append(f"{page}: {command}")
    assert wrong == []


def test_the_states_own_columns_are_in_its_reference() -> None:
    from cdc_backfill.state.table import BOOKKEEPING

    text = (ROOT / "docs" / "reference" / "state.md").read_text()
    assert [c for c in BOOKKEEPING if f"`{c}`" not in text] == []
