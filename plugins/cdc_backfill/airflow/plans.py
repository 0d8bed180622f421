"""Pure decisions behind the operators, sensor and trigger: signals from form values, the spark-submit
application and arguments, whether the stream has passed a fence, whether Debezium's windows are done
(``signals.debezium_windows``), and what a collection's progress rows say. No Airflow, no I/O: tested on what they return.
"""

from __future__ import annotations

import ast
import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdc_backfill.signals.model import Signal, execute_snapshot, stop_snapshot
from cdc_backfill.signals.statuses import FINISHED, rollup
from cdc_backfill.signals.validate import CHUNK_MAX
from cdc_backfill.snapshot.compression import CHUNK_COMPRESSIONS
from cdc_backfill.snapshot.progress import RangeProgress
from cdc_backfill.spark.submit import reconcile_command
from cdc_backfill.verify.steps import repair_command

ENGINES = ("native", "debezium")
MAX_CHUNK_SIZE = CHUNK_MAX
MAX_READERS = 16  # per collection: each reader holds a connection and a chunk
CAPTURES = ("drain", "external", "debezium", "kafka")
KAFKA_CONN_ID = "kafka_default"  # the Kafka provider's default connection


def as_list(value: Any) -> list[str]:
    """Collections from a form or a template: a list, a JSON / Python list literal, or comma-separated text.

    Templates render to text unless the DAG renders native objects, so both shapes must be read.
    """
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return []
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = ast.literal_eval(text)  # "['a', 'b']" as Jinja writes a list
            return [str(v).strip() for v in parsed if str(v).strip()]
        return [part.strip() for part in text.split(",") if part.strip()]
    # a form sends one item per line: a blank line (a trailing newline, say) is not a collection
    return [str(v).strip() for v in value if str(v).strip()]


def optional_text(value: Any) -> str | None:
    """A form's empty text (or None, or a rendered ``None``) means "not given"."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text in ("", "None") else text


def optional_int(value: Any, name: str, lo: int, hi: int) -> int | None:
    """A form's whole number that may be left empty (None: not given)."""
    return None if optional_text(value) is None else as_int(value, name, lo, hi)


def as_int(value: Any, name: str, lo: int, hi: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number, not {value!r}") from None
    if not lo <= number <= hi:
        raise ValueError(f"{name} must be between {lo} and {hi:,}, not {number}")
    return number


def as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on")
    return bool(value)


def one_of(value: Any, name: str, allowed: Sequence[str]) -> str:
    text = str(value).strip().lower()
    if text not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return text


def execute_signal(
    signal_id: str,
    collections: Sequence[str],
    condition: str | None = None,
    surrogate_key: str | None = None,
    chunk_size: int | None = None,
) -> Signal:
    """The execute-snapshot signal a form asks for."""
    return execute_snapshot(
        signal_id, collections, condition=condition, surrogate_key=surrogate_key, chunk_size=chunk_size
    )


# A snapshot form's fields and their defaults (collections has none: it must be given).
FORM_DEFAULTS: dict[str, Any] = {
    "condition": None, "surrogate_key": None, "chunk_size": None, "readers": 1, "chunk_compression": "auto",
    "engine": "native", "capture": "drain", "landing_dir": None, "state_dir": None, "verify": True,
    "topics": None, "kafka_conn_id": KAFKA_CONN_ID,
}  # fmt: skip
FORM_FIELDS = ("collections", *FORM_DEFAULTS)


@dataclass(frozen=True)
class SnapshotRequest:
    """A snapshot form's values (or a scheduled backfill's entry), normalised once: what the tasks after
    the validate task receive. ``snapshot_by``: the form's ``engine`` choice, native or debezium."""

    collections: tuple[str, ...]
    condition: str | None
    surrogate_key: str | None
    chunk_size: int | None  # None: the engine sizes the chunks (snapshot.sizing)
    readers: int
    chunk_compression: str  # of the READ chunk files (snapshot.compression.chunk_compression_for)
    snapshot_by: str
    capture: str
    landing_dir: str
    state_dir: str
    verify: bool
    topics: str | None = None  # capture kafka: a regex of whole topic names
    kafka_conn_id: str = KAFKA_CONN_ID

    @classmethod
    def from_form(cls, form: Mapping[str, Any]) -> SnapshotRequest:
        """From the form's values (``FORM_FIELDS``; a missing one takes its default). Raises ValueError
        naming the first value that is wrong."""
        v = {**FORM_DEFAULTS, **form}
        landing, state = optional_text(v["landing_dir"]), optional_text(v["state_dir"])
        if not landing or not state:
            raise ValueError("landing_dir and state_dir must be given")
        capture, topics = one_of(v["capture"], "capture", CAPTURES), optional_text(v["topics"])
        if capture == "kafka" and not topics:
            raise ValueError(
                "capture kafka needs topics: a regular expression of the whole names of the topics Kafka "
                "Connect writes (the tables', the signal table's and, for engine debezium, its notifications')"
            )
        return cls(
            tuple(as_list(v.get("collections"))),
            optional_text(v["condition"]),
            optional_text(v["surrogate_key"]),
            optional_int(v["chunk_size"], "chunk_size", 1, MAX_CHUNK_SIZE),
            as_int(v["readers"], "readers", 1, MAX_READERS),
            one_of(v["chunk_compression"], "chunk_compression", CHUNK_COMPRESSIONS),
            one_of(v["engine"], "engine", ENGINES),
            capture,
            landing,
            state,
            as_bool(v["verify"]),
            topics if capture == "kafka" else None,
            optional_text(v["kafka_conn_id"]) or KAFKA_CONN_ID,
        )

    def signal(self, signal_id: str) -> Signal:
        return execute_signal(
            signal_id, self.collections, self.condition, self.surrogate_key, self.chunk_size
        )


def stop_signal(signal_id: str, collections: Sequence[str] = ()) -> Signal:
    """A stop-snapshot; no collections stops every running snapshot."""
    return stop_snapshot(signal_id, collections)


def reconcile_submit(
    landing: str,
    state: str,
    collections: Sequence[str],
    signal_table: str,
    ingest: bool = False,
    kafka: tuple[str, str] | None = None,
) -> tuple[str, list[str]]:
    """(application, application arguments) for SparkSubmitOperator, cut from the project's one
    spark-submit command line (``cdc_backfill.spark.submit.reconcile_command``) so that both stay equal.
    ``ingest``: the landing receives JSON batches (``capture debezium``), ingested in the same job.
    ``kafka``: (bootstrap servers, topics), read into the landing in the same job first (the operator
    adds Spark's Kafka source and the broker's settings, which the arguments never carry)."""
    cmd = reconcile_command(landing, state, list(collections), ingest=ingest, kafka=kafka)
    at = next(i for i, part in enumerate(cmd) if part.endswith(".py"))
    return cmd[at], [*cmd[at + 1 :], "--signal-table", signal_table]


def ingests_json(capture: str) -> bool:
    """Whether the reconcile of a snapshot with the form's ``capture`` ingests the landing's JSON first:
    Debezium lands the stream as JSON (the DAG's own drain, or another process's: ``capture debezium
    --follow``, a Kafka Connect or Debezium Server sink)."""
    return capture in ("debezium", "external")


# ---------------------------------------------------------------- the stream and its fences


def fence_target(snapshots: Iterable[Any]) -> int | None:
    """The greatest fence among the snapshot tasks' results (stopped or Debezium-run ones have none)."""
    fences = [s.get("fence_lsn") for s in snapshots if isinstance(s, dict)]
    known = [int(f) for f in fences if f is not None]
    return max(known) if known else None


# ---------------------------------------------------------------- progress


@dataclass(frozen=True)
class Outcome:
    status: str  # not-started, pending, running, paused, done, stopped, failed
    chunks: int
    rows: int
    reason: str | None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


def collection_outcome(ranges: Sequence[RangeProgress], paused: bool = False) -> Outcome:
    """What a collection's progress rows say, by the one rule of ``snapshot.status.rollup``."""
    chunks = sum(r.chunks_done for r in ranges)
    rows = sum(r.rows_read for r in ranges)
    reason = "; ".join(sorted({r.reason for r in ranges if r.reason})) or None
    return Outcome(rollup((r.status for r in ranges), chunks, paused), chunks, rows, reason)


def repair_hint(
    collection: str, state_dir: str, landing_dir: str | None, conn_id: str | None, signal_table: str | None
) -> str:
    """The CLI command that repairs ``collection``'s differing ranges and waits for it, for a verify
    task's failure: the connection's password stays in Airflow, so the command reads the source's URL
    from the environment."""
    command, _ = repair_command(None, landing_dir or "LANDING", state_dir, collection, signal_table)
    env = f"CDC_BACKFILL_SOURCE_URL=<connection {conn_id}'s URI> " if conn_id else ""
    return env + shlex.join(command)


def nothing_to_stop(unfinished: Mapping[str, Sequence[str]], collections: Sequence[str]) -> str | None:
    """Why a stop-snapshot would stop nothing (no snapshot unfinished, or none of the collections named
    in one), else None. ``collections`` are patterns, as the signal takes them."""
    import re

    if not unfinished:
        return "nothing to stop: no snapshot is accepted, running or paused"
    if not collections:
        return None
    names = {c for colls in unfinished.values() for c in colls}
    if any(re.fullmatch(p, n) for p in collections for n in names):
        return None
    return f"nothing to stop: no unfinished snapshot reads {', '.join(collections)} (they read {', '.join(sorted(names))})"
