"""The documentation keeps up with the code: every setting the package reads is in the configuration
reference (docs/reference/configuration.md)."""

from __future__ import annotations

import re

from tests.conftest import ROOT

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
