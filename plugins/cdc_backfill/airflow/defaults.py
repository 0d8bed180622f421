"""Where a DAG's landing zone and state live when the form leaves them at their defaults (pure: reads
the environment and the project's config file, touches no database).

Order, first found wins: ``CDC_BACKFILL_LANDING`` / ``CDC_BACKFILL_STATE``; ``[lake] landing`` /
``[lake] state`` in the config file (the one that holds ``[source]``, see ``cdc_backfill.config``);
``<project>/.cdc/lake`` and ``<project>/.cdc/state`` (git-ignored).
"""

from __future__ import annotations

import os
import tomllib

from cdc_backfill.config import config_files
from cdc_backfill.runtime import state_dir

LANDING_ENV = "CDC_BACKFILL_LANDING"
STATE_ENV = "CDC_BACKFILL_STATE"


def _from_config(key: str) -> str | None:
    for path in config_files():
        if not path.is_file():
            continue
        try:
            lake = tomllib.loads(path.read_text(encoding="utf-8")).get("lake")
        except (OSError, tomllib.TOMLDecodeError):
            continue  # the source resolution reports a broken file; a default must not fail a DAG import
        if isinstance(lake, dict) and isinstance(lake.get(key), str):
            return lake[key]
    return None


def default_landing() -> str:
    return os.environ.get(LANDING_ENV) or _from_config("landing") or str(state_dir() / "lake")


def default_state() -> str:
    return os.environ.get(STATE_ENV) or _from_config("state") or str(state_dir() / "state")


SOURCE_CONN_ID = "cdc_source"  # the one default, in the docs, the forms and the hook


def default_source_conn_id() -> str:
    """The Airflow connection of the source (``cdc_source``, or ``CDC_BACKFILL_SOURCE_CONN_ID``)."""
    return os.environ.get("CDC_BACKFILL_SOURCE_CONN_ID", SOURCE_CONN_ID)
