"""The AirflowPlugin that registers what Airflow shows for cdc_backfill.

Airflow's plugin loader imports this file in every Airflow process: it must stay light and must not
import Spark (tests check that importing it leaves pyspark unimported).

- ``fastapi_apps``: the progress page, mounted by the API server at ``/cdc-backfill/``.
- ``external_views``: a "CDC snapshots" entry under Browse that shows that page inside the UI.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from cdc_backfill.airflow.progress_app import PREFIX, app


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
