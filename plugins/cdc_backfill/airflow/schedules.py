"""The scheduled backfills config: one ``[[backfill]]`` table per DAG (pure: parsing and checks only).

```toml
[[backfill]]
name = "orders_daily"                       # the DAG is cdc_scheduled_backfill__orders_daily
schedule = "@daily"                         # cron, preset, or none
start_date = "2026-01-01"
catchup = false
collections = ['public\\.orders']          # regexes of whole schema.table names
condition = "updated_at >= '{{ data_interval_start }}' AND updated_at < '{{ data_interval_end }}'"
chunk_size = 4096                           # optional, like the rest below (none: sized by the engine)
```

A broken entry is refused with its position and reason: the DAG file raises, so Airflow shows the
error as the file's import error instead of silently leaving the DAG out.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdc_backfill.airflow.plans import CAPTURES, ENGINES, KAFKA_CONN_ID, MAX_CHUNK_SIZE, MAX_READERS
from cdc_backfill.snapshot.compression import CHUNK_COMPRESSIONS

SCHEDULES_ENV = "CDC_BACKFILL_SCHEDULES"
DAG_PREFIX = "cdc_scheduled_backfill__"
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")
KNOWN_KEYS = {
    "name", "schedule", "start_date", "catchup", "collections", "condition", "surrogate_key", "chunk_size",
    "readers", "chunk_compression", "engine", "capture", "topics", "kafka_conn_id", "source_conn_id", "landing_dir", "state_dir",
    "reconcile", "verify", "max_active_runs", "description",
}  # fmt: skip


class ScheduleError(ValueError):
    """An entry of the schedules file that cannot become a DAG; the message says which and why."""


@dataclass(frozen=True)
class BackfillSchedule:
    name: str
    schedule: str | None
    start_date: dt.datetime
    collections: tuple[str, ...]
    condition: str | None = None
    catchup: bool = False
    surrogate_key: str | None = None
    chunk_size: int | None = None  # None: the engine sizes the chunks
    readers: int = 1
    chunk_compression: str = "auto"  # of the chunk files (snapshot.compression)
    engine: str = "native"
    capture: str = "drain"
    topics: str | None = None  # capture kafka
    kafka_conn_id: str = KAFKA_CONN_ID
    source_conn_id: str = ""
    landing_dir: str | None = None
    state_dir: str | None = None
    reconcile: bool = True
    verify: bool = False
    max_active_runs: int = 1
    description: str = ""

    @property
    def dag_id(self) -> str:
        return DAG_PREFIX + self.name


def schedules_file(dags_folder: Path) -> Path:
    """``CDC_BACKFILL_SCHEDULES``, else ``cdc_scheduled_backfills.toml`` beside the DAG files."""
    env = os.environ.get(SCHEDULES_ENV)
    return Path(env).expanduser() if env else dags_folder / "cdc_scheduled_backfills.toml"


def _date(value: Any, where: str) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC)
    if isinstance(value, str):
        try:
            return _date(dt.datetime.fromisoformat(value), where)
        except ValueError:
            pass
    raise ScheduleError(f"{where}: start_date must be a date such as 2026-01-01, not {value!r}")


def parse_entry(raw: dict[str, Any], where: str) -> BackfillSchedule:
    unknown = sorted(set(raw) - KNOWN_KEYS)
    if unknown:
        raise ScheduleError(
            f"{where}: unknown keys {', '.join(unknown)}; known: {', '.join(sorted(KNOWN_KEYS))}"
        )
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ScheduleError(f"{where}: name must be letters, digits, '_', '.', '-', not {name!r}")
    collections = raw.get("collections")
    if isinstance(collections, str):
        collections = [collections]
    if (
        not isinstance(collections, list)
        or not collections
        or not all(isinstance(c, str) for c in collections)
    ):
        raise ScheduleError(f"{where} ({name}): collections must be a non-empty list of regexes")
    schedule = raw.get("schedule", "@daily")
    if schedule in ("none", "None", ""):
        schedule = None
    if schedule is not None and not isinstance(schedule, str):
        raise ScheduleError(f"{where} ({name}): schedule must be a cron expression or preset")
    chunk = raw.get("chunk_size")
    readers = raw.get("readers", 1)
    bounded = [("readers", readers, MAX_READERS)]
    if chunk is not None:  # none given: the engine sizes the chunks
        bounded.append(("chunk_size", chunk, MAX_CHUNK_SIZE))
    for key, value, hi in bounded:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= hi:
            raise ScheduleError(f"{where} ({name}): {key} must be 1 to {hi:,}, not {value!r}")
    engine = raw.get("engine", "native")
    capture = raw.get("capture", "drain")
    compression = raw.get("chunk_compression", "auto")
    if compression not in CHUNK_COMPRESSIONS:
        raise ScheduleError(
            f"{where} ({name}): chunk_compression must be one of {', '.join(CHUNK_COMPRESSIONS)}"
        )
    if engine not in ENGINES:
        raise ScheduleError(f"{where} ({name}): engine must be one of {', '.join(ENGINES)}")
    if capture not in CAPTURES:
        raise ScheduleError(f"{where} ({name}): capture must be one of {', '.join(CAPTURES)}")
    topics = raw.get("topics")
    if capture == "kafka" and (not isinstance(topics, str) or not topics.strip()):
        raise ScheduleError(f"{where} ({name}): capture kafka needs topics, a regex of whole topic names")
    for key in ("catchup", "reconcile", "verify"):
        if key in raw and not isinstance(raw[key], bool):
            raise ScheduleError(f"{where} ({name}): {key} must be true or false")
    condition = raw.get("condition")
    if condition is not None and not isinstance(condition, str):
        raise ScheduleError(f"{where} ({name}): condition must be text (a SQL predicate, may use templates)")
    return BackfillSchedule(
        name=name,
        schedule=schedule,
        start_date=_date(raw.get("start_date", "2026-01-01"), f"{where} ({name})"),
        collections=tuple(collections),
        condition=condition or None,
        catchup=bool(raw.get("catchup", False)),
        surrogate_key=raw.get("surrogate_key") or None,
        chunk_size=chunk,
        readers=readers,
        chunk_compression=compression,
        engine=engine,
        capture=capture,
        topics=topics if capture == "kafka" else None,
        kafka_conn_id=str(raw.get("kafka_conn_id", KAFKA_CONN_ID)),
        source_conn_id=str(raw.get("source_conn_id", "")),
        landing_dir=raw.get("landing_dir"),
        state_dir=raw.get("state_dir"),
        reconcile=bool(raw.get("reconcile", True)),
        verify=bool(raw.get("verify", False)),
        max_active_runs=int(raw.get("max_active_runs", 1)),
        description=str(raw.get("description", "")),
    )


def parse_schedules(text: str, origin: str = "schedules") -> list[BackfillSchedule]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScheduleError(f"{origin}: not valid TOML: {exc}") from None
    entries = data.get("backfill", [])
    if not isinstance(entries, list):
        raise ScheduleError(f"{origin}: write each backfill as a [[backfill]] table")
    out = [parse_entry(raw, f"{origin} [[backfill]] #{i + 1}") for i, raw in enumerate(entries)]
    names = [s.name for s in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ScheduleError(f"{origin}: names must be unique; repeated: {', '.join(dupes)}")
    return out


def load_schedules(path: Path) -> list[BackfillSchedule]:
    """The entries of a schedules file; a missing file has none."""
    if not path.is_file():
        return []
    return parse_schedules(path.read_text(encoding="utf-8"), str(path))
