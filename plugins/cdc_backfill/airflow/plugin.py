"""The AirflowPlugin that registers what Airflow shows for cdc_backfill, found through the package's
``airflow.plugins`` entry point (a ``pip install`` is enough: no plugins folder).

Airflow's plugin loader imports this module in every Airflow process: it must stay light and must not
import Spark (tests check that importing it leaves pyspark unimported).

- ``fastapi_apps``: the progress page, mounted by the API server at ``/cdc-backfill/``.
- ``external_views``: a "CDC snapshots" entry under Browse that shows that page inside the UI.
"""

from __future__ import annotations

from importlib.metadata import entry_points

from airflow.plugins_manager import AirflowPlugin

from cdc_backfill.airflow.progress_app import PREFIX, app

ENTRY_POINT = "cdc_backfill.airflow.plugin:CdcBackfillPlugin"


class CdcBackfillPlugin(AirflowPlugin):
    name = "cdc_backfill"
    fastapi_apps = [{"app": app, "url_prefix": PREFIX, "name": "cdc_backfill snapshot progress"}]
    external_views = [
        {
            "name": "CDC snapshots",
            "href": f"{PREFIX}/",
            "destination": "nav",
            "category": "browse",
            "url_route": "cdc_snapshots",
        }
    ]


def registered_by_entry_point() -> bool:
    """Whether the installed package registers the plugin itself (then a plugins folder must not: Airflow
    refuses a plugin registered twice)."""
    return any(ep.value == ENTRY_POINT for ep in entry_points(group="airflow.plugins"))
