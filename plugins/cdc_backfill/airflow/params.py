"""The trigger forms' fields: a JSON schema and a description each, so that Airflow refuses a bad conf
before a run starts (the UI form, ``POST /api/v2/dags/{id}/dagRuns`` and ``dag.test(run_conf=...)``
alike). Defaults come from the environment and the project's config, read when the DAG file is parsed
(files only, no database)."""

from __future__ import annotations

from airflow.sdk import Param

from cdc_backfill.airflow.defaults import default_landing, default_source_conn_id, default_state
from cdc_backfill.airflow.plans import CAPTURES, ENGINES

COLLECTION_ITEM = {"type": "string", "minLength": 1, "maxLength": 512}
SQL_NAME = r"^([A-Za-z_][A-Za-z0-9_$]*)?$"


def source_conn_param() -> Param:
    return Param(
        default_source_conn_id(),
        type="string",
        maxLength=250,
        title="Source connection id",
        description="Airflow connection of the source database (conn type postgres). Empty: the project's "
        "source from CDC_BACKFILL_SOURCE_URL or the config file.",
    )


def snapshot_params() -> dict[str, Param]:
    """The form of ``cdc_incremental_snapshot``."""
    return {
        "collections": Param(
            type="array",
            items=COLLECTION_ITEM,
            minItems=1,
            maxItems=100,
            title="Collections",
            description="Tables to snapshot: regular expressions that match whole schema.table names, as in "
            "Debezium's data-collections, one per line (for example public\\.orders).",
        ),
        "condition": Param(
            "",
            type="string",
            maxLength=1500,
            title="Condition",
            description="Optional SQL predicate over the table's own columns (additional-condition), for "
            "example status = 'open'. Only rows matching it are read. Checked before the signal is sent.",
        ),
        "surrogate_key": Param(
            "",
            type="string",
            maxLength=128,
            pattern=SQL_NAME,
            title="Surrogate key",
            description="Optional column with a unique index to chunk by instead of the primary key "
            "(required for a table without one).",
        ),
        "chunk_size": Param(
            4096,
            type="integer",
            minimum=1,
            maximum=1_000_000,
            title="Chunk size",
            description="Rows per chunk: each chunk is read between its own low and high watermark.",
        ),
        "readers": Param(
            1,
            type="integer",
            minimum=1,
            maximum=16,
            title="Readers",
            description="Chunks read at once per collection, each over its own key range and connection.",
        ),
        "engine": Param(
            "native",
            type="string",
            enum=list(ENGINES),
            title="Engine",
            description="native: this project's engine reads the chunks. debezium: a Debezium connector "
            "reads them; the DAG sends the signal and waits for Debezium's windows.",
        ),
        "capture": Param(
            "drain",
            type="string",
            enum=list(CAPTURES),
            title="Capture",
            description="drain: the DAG lands the PostgreSQL stream itself (pgoutput slot cdc_backfill) after "
            "the snapshot. external: another process lands it (cdc_capture_postgres, capture --follow, "
            "Debezium); the DAG only waits for it.",
        ),
        "source_conn_id": source_conn_param(),
        "landing_dir": Param(
            default_landing(),
            type="string",
            minLength=1,
            maxLength=1024,
            title="Landing zone",
            description="Folder of the landed stream and READ chunks (CDC_BACKFILL_LANDING, or [lake] landing "
            "in the config file).",
        ),
        "state_dir": Param(
            default_state(),
            type="string",
            minLength=1,
            maxLength=1024,
            title="State",
            description="Folder of the reconciled states (CDC_BACKFILL_STATE, or [lake] state in the config "
            "file).",
        ),
        "verify": Param(
            True,
            type="boolean",
            title="Verify",
            description="Compare each state with the source range by range after the reconcile; the run fails "
            "when a range differs.",
        ),
    }


def stop_params() -> dict[str, Param]:
    """The form of ``cdc_stop_snapshot``."""
    return {
        "collections": Param(
            [],
            type="array",
            items=COLLECTION_ITEM,
            maxItems=100,
            title="Collections",
            description="Snapshots to stop: regular expressions of whole schema.table names. Empty: stop every "
            "running snapshot.",
        ),
        "source_conn_id": source_conn_param(),
    }


def capture_params() -> dict[str, Param]:
    """The form of ``cdc_capture_postgres`` (its schedule runs with these defaults)."""
    return {
        "landing_dir": Param(
            default_landing(),
            type="string",
            minLength=1,
            maxLength=1024,
            title="Landing zone",
            description="Folder the stream files are landed in.",
        ),
        "tables": Param(
            [],
            type="array",
            items=COLLECTION_ITEM,
            title="Tables",
            description="Regular expressions of the tables to capture; empty: every table with a primary key "
            "(the signal table always).",
        ),
        "source_conn_id": source_conn_param(),
    }
