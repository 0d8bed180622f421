"""The trigger forms' fields: a JSON schema and a description each, so that Airflow refuses a bad conf
before a run starts (the UI form, ``POST /api/v2/dags/{id}/dagRuns`` and ``dag.test(run_conf=...)``
alike). Defaults come from the environment and the project's config, read when the DAG file is parsed
(files only, no database).

How Airflow 3.3's form reads a schema decides some shapes here:

- a field whose ``type`` does not admit ``null`` is required, and an emptied field is ``null``: every
  optional field admits ``null`` and says what empty means;
- a number field takes ``minimum``/``maximum`` as the input's bounds and silently clamps what is typed
  to them: the ranges are given inside ``allOf``, which the server checks (refusing with "0 is less than
  the minimum of 1") and the form does not clamp;
- a list is typed one item per line, so a trailing newline sends an empty item: empty items are
  allowed (and dropped by the validate task), a list needs one item that is not blank.
"""

from __future__ import annotations

from airflow.sdk import Param

from cdc_backfill.airflow.defaults import default_landing, default_source_conn_id, default_state
from cdc_backfill.airflow.plans import CAPTURES, ENGINES, KAFKA_CONN_ID, MAX_CHUNK_SIZE, MAX_READERS
from cdc_backfill.snapshot.compression import CHUNK_COMPRESSIONS
from cdc_backfill.snapshot.sizing import ADAPTIVE_SIZES

COLLECTION_ITEM = {"type": "string", "maxLength": 512}
NOT_BLANK = {"type": "string", "pattern": r"\S"}
SQL_NAME = r"^([A-Za-z_][A-Za-z0-9_$]*)?$"
OPTIONAL_TEXT = ["string", "null"]


def source_conn_param() -> Param:
    return Param(
        default_source_conn_id(),
        type=OPTIONAL_TEXT,
        maxLength=250,
        title="Source connection id",
        description="Airflow connection of the source database (conn type postgres), cdc_source by default. "
        "Empty, or cdc_source when it is not defined: the source from CDC_BACKFILL_SOURCE_URL or the config "
        "file in Airflow's environment.",
    )


def collections_param(description: str, default: list[str] | None, required: bool) -> Param:
    schema: dict[str, object] = {"items": COLLECTION_ITEM, "maxItems": 100}
    if required:
        schema.update(type="array", minItems=1, contains=NOT_BLANK)
    else:
        schema.update(type=["array", "null"])
    return Param(default, title="Collections", description=description, **schema)


def landing_param(description: str) -> Param:
    return Param(
        default_landing(),
        type="string",
        minLength=1,
        maxLength=1024,
        title="Landing zone",
        description=description,
    )


def snapshot_params() -> dict[str, Param]:
    """The form of ``cdc_incremental_snapshot``; the form shows the fields in this order: which rows,
    how they are read, then where from and where to."""
    return {
        **rows_params(),
        **reading_params(),
        "source_conn_id": source_conn_param(),
        "landing_dir": landing_param(
            "Folder of the landed stream and READ chunks (CDC_BACKFILL_LANDING, or [lake] landing in the "
            "config file)."
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


def rows_params() -> dict[str, Param]:
    """Which rows a snapshot reads: the collections, a condition, the key to chunk by."""
    return {
        "collections": collections_param(
            "Required. Tables to snapshot: regular expressions that match whole schema.table names, as in "
            "Debezium's data-collections, one per line (for example public\\.orders). Blank lines are "
            "ignored.",
            None,
            required=True,
        ),
        "condition": Param(
            None,
            type=OPTIONAL_TEXT,
            maxLength=1500,
            title="Condition",
            description="Optional SQL predicate over the table's own columns (additional-condition), for "
            "example status = 'open'. Only rows matching it are read. Checked before the signal is sent. "
            "Empty: every row.",
        ),
        "surrogate_key": Param(
            None,
            type=OPTIONAL_TEXT,
            maxLength=128,
            pattern=SQL_NAME,
            title="Surrogate key",
            description="Optional column with a unique index to chunk by instead of the primary key "
            "(required for a table without one). Empty: the primary key.",
        ),
    }


def reading_params() -> dict[str, Param]:
    """How a snapshot is read and its stream landed: chunk size, readers, chunk compression, engine,
    capture."""
    return {
        "chunk_size": Param(
            None,
            type=["null", "integer"],
            allOf=[{"minimum": 1, "maximum": MAX_CHUNK_SIZE}],
            title="Chunk size",
            description=f"Rows per chunk, 1 to {MAX_CHUNK_SIZE:,}: each chunk is read between its own low and "
            f"high watermark. Empty: {ADAPTIVE_SIZES}.",
        ),
        "readers": Param(
            1,
            type="integer",
            allOf=[{"minimum": 1, "maximum": MAX_READERS}],
            title="Readers",
            description=f"Chunks read at once per collection, 1 to {MAX_READERS}, each over its own key range "
            "and connection.",
        ),
        "chunk_compression": Param(
            "auto",
            type="string",
            enum=list(CHUNK_COMPRESSIONS),
            title="Chunk compression",
            description="How the native engine's chunk files are compressed. auto: none on a local landing "
            "(the reconcile reads each once and writes the state compressed), zstd on S3 (every byte is "
            "uploaded). zstd: about a third of the bytes, at some of the snapshot's speed.",
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
            "the snapshot. debezium: the DAG runs Debezium's connector (embedded, slot cdc_backfill_debezium) "
            "until the snapshot's windows closed, then drains it; with engine debezium that connector also "
            "reads the chunks. external: another process lands it (cdc_capture_postgres, capture --follow, "
            "capture debezium --follow); the DAG only waits for it. kafka: Debezium in Kafka Connect writes the "
            "stream to topics (the signal table's too); the DAG waits until they delivered the snapshot's end, "
            "and the reconcile reads them.",
        ),
        "topics": Param(
            None,
            type=OPTIONAL_TEXT,
            maxLength=1024,
            title="Kafka topics",
            description="capture kafka only: a regular expression of whole topic names, matching the tables' "
            "topics, the signal table's and (engine debezium) Debezium's notification topic, for example "
            "cdc\\..*. Empty with another capture.",
        ),
        "kafka_conn_id": Param(
            KAFKA_CONN_ID,
            type=OPTIONAL_TEXT,
            maxLength=250,
            title="Kafka connection id",
            description="capture kafka only: the Airflow connection of the broker (conn type kafka; its extra "
            'holds librdkafka\'s settings: {"bootstrap.servers": "HOST:9092"}, TLS and SASL too).',
        ),
    }


def stop_params() -> dict[str, Param]:
    """The form of ``cdc_stop_snapshot``."""
    return {
        "collections": collections_param(
            "Optional. Snapshots to stop: regular expressions of whole schema.table names, one per line. "
            "Empty: stop every running snapshot.",
            None,
            required=False,
        ),
        "source_conn_id": source_conn_param(),
    }


def capture_params() -> dict[str, Param]:
    """The form of ``cdc_capture_postgres`` (its schedule runs with these defaults)."""
    return {
        "landing_dir": landing_param("Folder the stream files are landed in."),
        "collections": Param(
            None,
            type=["array", "null"],
            items=COLLECTION_ITEM,
            title="Collections",
            description="Optional. Regular expressions of the collections (schema.table) to capture, one per "
            "line. Empty: every "
            "table with a primary key (the signal table always).",
        ),
        "source_conn_id": source_conn_param(),
    }


def doctor_params() -> dict[str, Param]:
    """The form of ``cdc_doctor``."""
    return {"source_conn_id": source_conn_param()}
