"""The package's boundaries: what each kind of module may import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.imports import imported_after as _imported_after
from tests.support.imports import project_imports

PLUGINS = ROOT / "plugins"
PACKAGE = PLUGINS / "cdc_backfill"
MODULE_LINES = 400  # about: a module over it holds more than one trade
DAG_LINES = 80  # a DAG file declares parameters and wires tasks

# Modules that must import neither Airflow nor Spark (DESIGN.md §7).
PURE_MODULES = [
    "cdc_backfill",
    "cdc_backfill.config",
    "cdc_backfill.runtime",
    "cdc_backfill.doctor",
    "cdc_backfill.events",
    "cdc_backfill.events.debezium",
    "cdc_backfill.events.dataworks",
    "cdc_backfill.events.positions",
    "cdc_backfill.events.semantic",
    "cdc_backfill.signals",
    "cdc_backfill.signals.store",
    "cdc_backfill.signals.tables",
    "cdc_backfill.signals.states",
    "cdc_backfill.cli",
    "cdc_backfill.cli.signals",
    "cdc_backfill.capture.postgres",
    "cdc_backfill.capture.publication",
    "cdc_backfill.capture.lines",
    "cdc_backfill.capture.status",
    "cdc_backfill.cli.reconcile",
    "cdc_backfill.layout",
    "cdc_backfill.pg.catalog",
    "cdc_backfill.snapshot.control",
    "cdc_backfill.snapshot.ranges",
    "cdc_backfill.snapshot.chunks",
    "cdc_backfill.snapshot.status",
    "cdc_backfill.pg.fastpath",
    "cdc_backfill.snapshot.engine",
    "cdc_backfill.cli.snapshot",
    "cdc_backfill.cli.verify",
    "cdc_backfill.reconcile.runs",
    "cdc_backfill.verify.compare",
    "cdc_backfill.verify.recheck",
    "cdc_backfill.verify.forms",
    "cdc_backfill.verify.ranges",
    "cdc_backfill.verify.repair",
    "cdc_backfill.verify.source",
    "cdc_backfill.verify.sql",
]


@pytest.mark.parametrize("module", PURE_MODULES)
def test_pure_modules_import_neither_airflow_nor_spark(module: str) -> None:
    loaded = _imported_after(f"import {module}")
    assert "airflow" not in loaded
    assert "pyspark" not in loaded


def test_airflow_plugin_does_not_import_spark() -> None:
    # Airflow's plugin loader puts the plugins folder on sys.path before importing the file.
    loaded = _imported_after(f"sys.path.insert(0, {str(PLUGINS)!r}); import cdc_backfill_plugin")
    assert "airflow" in loaded
    assert "pyspark" not in loaded


def test_code_is_lint_clean_and_formatted() -> None:
    """`make lint`, run by the test suite so that CI holds the line too."""
    ruff = [sys.executable, "-m", "ruff"]
    check = subprocess.run([*ruff, "check", str(ROOT)], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout
    fmt = subprocess.run([*ruff, "format", "--check", str(ROOT)], capture_output=True, text=True, timeout=120)
    assert fmt.returncode == 0, fmt.stdout


def modules() -> list[tuple[str, object]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(PLUGINS).with_suffix("").parts).removesuffix(".__init__")
        out.append((name, path))
    return out


def package_of(module: str) -> str:
    """``cdc_backfill.snapshot.engine`` -> ``snapshot``; a top-level module is its own package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_module_holds_several_trades() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MODULE_LINES
    }
    assert long == {}, f"modules over {MODULE_LINES} lines: split them"
    dags = {
        p.name: n for p in (ROOT / "dags").glob("*.py") if (n := len(p.read_text().splitlines())) > DAG_LINES
    }
    assert dags == {}, f"DAG files over {DAG_LINES} lines: move the logic into the package"


def test_layers_only_look_down() -> None:
    """No private name of another package; the capture knows nothing of the snapshot engine, verify
    nothing of its internals, Airflow and everything else nothing of the command line."""
    wrong = []
    for module, path in modules():
        here = package_of(module)
        for target, name in project_imports(path, PLUGINS):
            there = package_of(target)
            private = (name.startswith("_") and not name.startswith("__")) or any(
                part.startswith("_") and not part.startswith("__") and part != "_speedups"
                for part in target.split(".")
            )
            if private and there != here:
                wrong.append(f"{module} imports the private {target}.{name}")
            if here == "capture" and there == "snapshot":
                wrong.append(f"{module} (capture) imports {target}")
            if here == "verify" and there == "snapshot" and target != "cdc_backfill.snapshot.status":
                wrong.append(f"{module} (verify) imports {target}")
            if there == "cli" and here != "cli":
                wrong.append(f"{module} imports the command line ({target})")
            if target.startswith("tests"):
                wrong.append(f"{module} imports test code ({target})")
    assert wrong == []


def test_test_modules_share_helpers_through_tests_support() -> None:
    """A test imports no other test module, and helpers of another folder only from tests/support."""
    wrong = []
    for path in (ROOT / "tests").rglob("*.py"):
        folder = ".".join(path.parent.relative_to(ROOT).parts)
        for target, _ in project_imports(path, ROOT):
            if not target.startswith("tests."):
                continue
            there = target.rsplit(".", 1)[0]
            shared = target.startswith("tests.support") or target == "tests.conftest" or there == folder
            if target.split(".")[-1].startswith("test_") or not shared:
                wrong.append(f"{path.relative_to(ROOT)} imports {target}")
    assert wrong == []


def test_the_plugin_loader_sees_only_the_plugin_file() -> None:
    """Airflow runs every .py file of the plugins folder as a top-level module named by its file name:
    without plugins/.airflowignore, ``cdc_backfill/files.py`` would become ``sys.modules["files"]``, and a
    module named like the standard library's would replace it in the scheduler."""
    from airflow._shared.module_loading import find_path_from_directory

    seen = sorted(
        Path(p).relative_to(PLUGINS).as_posix() for p in find_path_from_directory(PLUGINS, ".airflowignore")
    )
    assert [p for p in seen if p.endswith(".py")] == ["cdc_backfill_plugin.py"]
    shadowing = [str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py") if p.stem in sys.stdlib_module_names]
    assert shadowing == []
