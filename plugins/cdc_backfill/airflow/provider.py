"""What Airflow learns of cdc_backfill when the package is installed: the ``apache_airflow_provider``
entry point returns this. Airflow reads it in every process, so it imports nothing of Airflow's or ours.

The connection type is the source database's (a PostgreSQL form whose connections the hooks read);
the Kafka connection is the Kafka provider's, which the ``airflow`` extra installs. The plugin (the
progress page) is not listed here: it registers through the ``airflow.plugins`` entry point, which
Airflow always loads (a provider's plugins load only when providers are discovered eagerly, and then
it would be registered twice).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

PACKAGE = "cdc-backfill"
SOURCE_CONN_TYPE = "cdc_backfill_source"
SOURCE_HOOK_NAME = "cdc_backfill source (PostgreSQL)"
# the form of the connection type: a PostgreSQL server and database
SOURCE_FORM = {
    "hidden_fields": [],
    "relabeling": {"schema": "Database"},
    "placeholders": {"host": "db.example.com", "port": "5432", "schema": "app", "login": "cdc"},
}
_INTEGRATION = "cdc_backfill"


def get_provider_info() -> dict[str, object]:
    try:
        versions = [version(PACKAGE)]
    except PackageNotFoundError:  # imported from a checkout that is not installed
        versions = []
    return {
        "package-name": PACKAGE,
        "name": "cdc_backfill",
        "description": "Incremental snapshots and backfills for change-data-capture pipelines, reconciled "
        "on Spark into Delta tables and verified against the source.",
        "versions": versions,
        "integrations": [{"integration-name": _INTEGRATION, "tags": ["software"]}],
        "operators": [
            {"integration-name": _INTEGRATION, "python-modules": ["cdc_backfill.airflow.operators"]}
        ],
        "sensors": [{"integration-name": _INTEGRATION, "python-modules": ["cdc_backfill.airflow.sensors"]}],
        "triggers": [{"integration-name": _INTEGRATION, "python-modules": ["cdc_backfill.airflow.triggers"]}],
        "hooks": [{"integration-name": _INTEGRATION, "python-modules": ["cdc_backfill.airflow.hooks"]}],
        "connection-types": [
            {
                "connection-type": SOURCE_CONN_TYPE,
                "hook-class-name": "cdc_backfill.airflow.hooks.CdcSourceHook",
                "hook-name": SOURCE_HOOK_NAME,
            }
        ],
    }


def connection_url(uri: str, conn_type: str | None) -> str:
    """A connection's URI as a database URL: the provider's own type names a PostgreSQL database."""
    if conn_type == SOURCE_CONN_TYPE:
        return "postgresql://" + uri.partition("://")[2]
    return uri
