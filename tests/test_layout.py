"""The package's boundaries: what each kind of module may import."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.support.imports import imported_after as _imported_after

PLUGINS = ROOT / "plugins"

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
    "cdc_backfill.cli",
    "cdc_backfill.cli_signal",
    "cdc_backfill.capture.postgres",
    "cdc_backfill.pg.fastpath",
    "cdc_backfill.snapshot.engine",
    "cdc_backfill.cli_snapshot",
    "cdc_backfill.cli_verify",
    "cdc_backfill.reconcile.runs",
    "cdc_backfill.verify.compare",
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
