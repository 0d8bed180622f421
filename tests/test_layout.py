"""The package's boundaries: what each kind of module may import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.support.imports import import_time_imports, project_imports
from tests.support.imports import imported_after as _imported_after

PLUGINS = ROOT / "plugins"
DAGS = ROOT / "dags"
PACKAGE = PLUGINS / "cdc_backfill"
MODULE_LINES = 400  # about: a module over it holds more than one trade
DAG_LINES = 80  # a DAG file declares parameters and wires tasks

# The rule by path (docs/design.md §7): only modules in a folder named ``spark`` import pyspark (the runtime in
# ``cdc_backfill/spark/``, each concept's DataFrame side in its own ``spark/``), only ``cdc_backfill/airflow/``
# imports Airflow; every other module imports neither when it is imported, directly or through another.
SPARK_FOLDER = "spark"
AIRFLOW_PACKAGE = "cdc_backfill.airflow"


def may_import(module: str) -> set[str]:
    parts = module.split(".")
    allowed = set()
    # the spark folders, and the Spark jobs' entry points (cdc_backfill/jobs/), which build sessions
    if SPARK_FOLDER in parts[1:-1] or module == "cdc_backfill.spark" or parts[:2] == ["cdc_backfill", "jobs"]:
        allowed.add("pyspark")
    if module == AIRFLOW_PACKAGE or module.startswith(AIRFLOW_PACKAGE + "."):
        allowed.add("airflow")
    return allowed


def import_closure() -> dict[str, set[str]]:
    """Each module -> the third-party top names importing it loads (statically, through the project's
    modules and their packages' ``__init__``)."""
    paths = dict(modules())
    direct = {name: import_time_imports(path, PLUGINS) for name, path in paths.items()}

    def project(target: str) -> list[str]:
        parts = target.split(".")
        return [".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in paths]

    closure: dict[str, set[str]] = {}
    for start in paths:
        seen, todo, third = set(), [start, *project(start)], set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for target in direct[name]:
                if target.split(".")[0] == "cdc_backfill":
                    todo += project(target)
                else:
                    third.add(target.split(".")[0])
        closure[start] = third
    return closure


def test_only_spark_folders_import_spark_and_only_airflow_imports_airflow() -> None:
    wrong = []
    for module, loaded in sorted(import_closure().items()):
        for framework in ("pyspark", "airflow"):
            if framework in loaded and framework not in may_import(module):
                wrong.append(f"{module} imports {framework} when imported")
    assert wrong == []


@pytest.mark.parametrize(
    "module", ["cdc_backfill.cli.main", "cdc_backfill.demo", "cdc_backfill.verify.source_side"]
)
def test_the_static_rule_agrees_with_a_real_import(module: str) -> None:
    """The rule above reads syntax trees; a fresh interpreter importing the command line confirms it."""
    loaded = _imported_after(f"import {module}")
    assert "airflow" not in loaded
    assert "pyspark" not in loaded


@pytest.mark.parametrize(
    "importing",
    [
        "import cdc_backfill.airflow.plugin",  # its entry point
        # a checkout's plugins folder: Airflow's loader puts it on sys.path before importing the file
        f"sys.path.insert(0, {str(PLUGINS)!r}); import cdc_backfill_plugin",
    ],
)
def test_airflow_plugin_does_not_import_spark(importing: str) -> None:
    loaded = _imported_after(importing)
    assert "airflow" in loaded
    assert "pyspark" not in loaded


def test_the_provider_info_imports_nothing_of_airflow_or_spark() -> None:
    """Airflow reads it in every process, before it decides what to import."""
    loaded = _imported_after("import cdc_backfill.airflow.provider")
    assert "airflow" not in loaded and "pyspark" not in loaded


def test_the_checkouts_dag_files_are_the_ones_the_command_writes() -> None:
    from cdc_backfill.airflow.dags import DAG_FILES, dag_file_text

    assert {name: (DAGS / name).read_text() for name in DAG_FILES} == {n: dag_file_text(n) for n in DAG_FILES}


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
