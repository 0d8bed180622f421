"""cdc_backfill's Airflow plugin for a checkout whose package is not installed.

An installed package registers the plugin through its ``airflow.plugins`` entry point; Airflow refuses a
plugin registered twice, so this file then defines nothing (cdc_backfill.airflow.plugin holds it).
"""

from __future__ import annotations

from cdc_backfill.airflow.plugin import registered_by_entry_point

if not registered_by_entry_point():
    from cdc_backfill.airflow.plugin import CdcBackfillPlugin

    __all__ = ["CdcBackfillPlugin"]
