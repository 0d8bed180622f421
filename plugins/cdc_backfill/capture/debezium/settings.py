"""The configuration of a Debezium connector run through its embedded engine, built from the project's
own settings (pure): the source URL, the collections, the signal table, the slot and publication, the
landing zone (the engine's offsets live there, beside what they describe).

The traps met running Debezium 3.6 by hand are handled here, once:

- ``signal.data.collection`` is named the way each connector reads it (PostgreSQL ``schema.table``,
  SQL Server ``database.schema.table``, Oracle ``DATABASE.SCHEMA.TABLE``, MySQL ``database.table``);
  a name the connector would silently ignore is refused up front with the reason;
- the signal table is captured too (it must be in ``table.include.list``: the watermarks travel in
  the stream);
- ``snapshot.mode=no_data`` (``never`` no longer exists): snapshots are incremental, from signals;
- numerics as exact text (``decimal.handling.mode=string``) with the source's column types
  propagated into the Connect schemas, so that ingest types every column without base64.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from cdc_backfill.lakepath import LakePath, S3Path
from cdc_backfill.landing.layout import debezium_dir

CONNECTORS = {
    "postgresql": "io.debezium.connector.postgresql.PostgresConnector",
    "sqlserver": "io.debezium.connector.sqlserver.SqlServerConnector",
    "oracle": "io.debezium.connector.oracle.OracleConnector",
    "mysql": "io.debezium.connector.mysql.MySqlConnector",
}
DEFAULT_PORTS = {"postgresql": 5432, "sqlserver": 1433, "oracle": 1521, "mysql": 3306}
WATERMARKING = ("insert_insert", "insert_delete")
DEFAULT_SLOT = "cdc_backfill_debezium"  # PostgreSQL's slot and publication, unless told otherwise
_SCHEMES = {
    "postgresql": "postgresql", "postgres": "postgresql", "mssql": "sqlserver", "sqlserver": "sqlserver",
    "oracle": "oracle", "mysql": "mysql", "mariadb": "mysql",
}  # fmt: skip


class DebeziumConfigError(ValueError):
    """A configuration the connector would refuse or silently misread; the message says why."""


@dataclass(frozen=True)
class DebeziumSettings:
    url: str  # the source, as the user writes it (postgresql://, mssql://, oracle://, mysql://)
    collections: tuple[str, ...]  # schema.table (database.table for MySQL), as the source names them
    signal_table: str  # the signal table, named like the collections
    landing: Path
    name: str = "cdc_backfill"  # the connector's name and topic prefix
    slot: str = DEFAULT_SLOT  # PostgreSQL
    publication: str = DEFAULT_SLOT  # PostgreSQL
    chunk_size: int = 1024  # incremental.snapshot.chunk.size (Debezium's default)
    watermarking: str = "insert_insert"
    poll_ms: int = 500  # poll.interval.ms (Debezium's default): the idle time between two chunks
    extra: Mapping[str, str] = field(default_factory=dict)  # any other property, verbatim (last word)


def connector_of(url: str) -> str:
    scheme = urlsplit(url).scheme.split("+", 1)[0].lower()
    try:
        return _SCHEMES[scheme]
    except KeyError:
        known = ", ".join(sorted(set(_SCHEMES)))
        raise DebeziumConfigError(
            f"no Debezium connector for a {scheme or 'missing'}:// source (one of: {known})"
        ) from None


def notification_topic(name: str) -> str:
    return f"{name}.__notifications"


def offsets_file(landing: Path, name: str) -> Path:
    """Where the engine keeps its offsets: in the landing zone, beside the events they describe."""
    return debezium_dir(landing) / f"{name}.offsets"


def history_file(landing: Path, name: str) -> Path:
    return debezium_dir(landing) / f"{name}.history"


def local_copy(path: LakePath) -> Path:
    """The local file Debezium's engine reads and writes for a file of the landing's ``_debezium/``: the
    file itself in a local landing. Its file stores take local paths only, so for a landing on S3 a copy
    in a cache folder of this machine, named by the landing, which the capture fills from the landing
    before the engine starts and stores back after each batch (``capture.debezium.batch_files``)."""
    return local_cache_dir(path.parent) / path.name if isinstance(path, S3Path) else Path(path)


def local_cache_dir(folder: S3Path) -> Path:
    """The cache folder of this machine that holds the engine's copies of an S3 ``_debezium/`` folder."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    digest = hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    return Path(base) / "cdc_backfill" / "debezium" / digest


def written_by_debezium(landing: Path) -> bool:
    """Has Debezium's connector landed into ``landing``? (It keeps its offsets there.)"""
    return any(offsets_file(landing, "*").parent.glob("*.offsets"))


def bound_slots(landing: Path) -> list[str]:
    """Every slot ``landing`` is bound to. Raises ``SlotBindingError`` for a binding that cannot be read."""
    from cdc_backfill.capture.binding import read_landing_meta

    return list((read_landing_meta(landing) or {}).get("slots", {}))


def native_slots(landing: Path) -> list[str]:
    """The native capture's slots ``landing`` is bound to (every bound slot but Debezium's)."""
    return [s for s in bound_slots(landing) if s != DEFAULT_SLOT]


def is_debezium_landing(landing: Path) -> bool:
    """The one rule for "Debezium writes this landing": no native capture's slot is bound to it, and
    Debezium's slot is bound to it or Debezium's offsets are in it (a landing a connector wrote without
    the CLI's binding: Kafka Connect with a file sink, or the tests'). Raises ``SlotBindingError``."""
    slots = bound_slots(landing)  # read once
    if any(s != DEFAULT_SLOT for s in slots):
        return False
    return DEFAULT_SLOT in slots or written_by_debezium(landing)


def drain_command(
    program: Sequence[str],
    landing: str,
    source: Sequence[str] = (),
    signal_table: str | None = None,
    until_snapshot: str | None = None,
) -> list[str]:
    """Debezium's drain as one command line (pure): what verify runs to bring a Debezium landing up to
    now, and what a repair prints for the user. ``program`` is how the CLI is started."""
    sig = ["--signal-table", signal_table] if signal_table else []
    until = ["--until-snapshot", until_snapshot] if until_snapshot else []
    return [*program, "capture", "debezium", *source, "--landing", landing, *sig, "--drain", *until]


def signal_data_collection(connector: str, signal_table: str, database: str) -> str:
    """``signal.data.collection`` as the connector reads it; refuses a name it would ignore."""
    parts = signal_table.split(".")
    if connector == "postgresql":
        if len(parts) != 2:
            raise DebeziumConfigError(
                f"signal table {signal_table!r}: PostgreSQL's connector reads signal.data.collection as "
                "schema.table (a database prefix is silently ignored and no snapshot ever starts)"
            )
        return signal_table
    if connector == "sqlserver":
        if len(parts) != 2:
            raise DebeziumConfigError(f"signal table {signal_table!r}: give schema.table (dbo.cdc_signal)")
        return f"{database}.{signal_table}"
    if connector == "oracle":
        if len(parts) != 2:
            raise DebeziumConfigError(f"signal table {signal_table!r}: give SCHEMA.TABLE")
        return f"{database}.{signal_table}".upper()
    if len(parts) != 2:
        raise DebeziumConfigError(f"signal table {signal_table!r}: MySQL's connector reads database.table")
    return signal_table


def _include_list(names: Sequence[str]) -> str:
    return ",".join(re.escape(n) for n in names)


def connector_properties(s: DebeziumSettings) -> dict[str, str]:
    """Every property of the connector and the embedded engine, as strings."""
    connector = connector_of(s.url)
    if s.watermarking not in WATERMARKING:
        raise DebeziumConfigError(f"watermarking {s.watermarking!r}: one of {', '.join(WATERMARKING)}")
    if not 1 <= s.chunk_size <= 1_000_000:
        raise DebeziumConfigError(f"chunk size {s.chunk_size}: between 1 and 1,000,000")
    u = urlsplit(s.url)
    database = unquote(u.path.lstrip("/"))
    if connector != "mysql" and not database:
        raise DebeziumConfigError(f"the source URL names no database: add /<database> to it ({connector})")
    props = {
        "name": s.name,
        "connector.class": CONNECTORS[connector],
        "topic.prefix": s.name,
        "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
        "offset.storage.file.filename": str(local_copy(offsets_file(s.landing, s.name))),
        "offset.flush.interval.ms": "0",  # offsets are written once a batch has landed
        "database.hostname": u.hostname or "localhost",
        "database.port": str(u.port or DEFAULT_PORTS[connector]),
        "database.user": unquote(u.username or ""),
        "database.password": unquote(u.password or ""),
        "snapshot.mode": "no_data",  # `never` was removed in 3.x; snapshots come from signals
        "signal.enabled.channels": "source",
        # Oracle names tables by their pluggable database when the connector is given one
        "signal.data.collection": signal_data_collection(
            connector, s.signal_table, s.extra.get("database.pdb.name", database)
        ),
        "incremental.snapshot.chunk.size": str(s.chunk_size),
        "incremental.snapshot.watermarking.strategy": s.watermarking,
        "poll.interval.ms": str(s.poll_ms),
        "decimal.handling.mode": "string",  # exact text, not base64 bytes
        "column.propagate.source.type": ".*",  # the source's type names reach the Connect schemas
        "converter.schemas.enable": "true",  # the {schema, payload} wrapper: ingest types from it
        "tombstones.on.delete": "false",
        # Debezium retries a lost connection forever by default, logging only: three restarts 10 s
        # apart ride out a restart of the source, then the run fails and says why.
        "errors.max.retries": "3",
        # Debezium's notifications (an incremental snapshot's STARTED ... COMPLETED, under the signal's
        # id) come through the engine beside the changes: a drain can wait for a snapshot to end.
        "notification.enabled.channels": "sink",
        "notification.sink.topic.name": notification_topic(s.name),
    }
    props.update(connector_specific(connector, s, database))
    props.update({k: str(v) for k, v in s.extra.items()})
    return props


def connector_specific(connector: str, s: DebeziumSettings, database: str) -> dict[str, str]:
    """The properties one connector needs beyond the common ones: its database, the tables, and (all
    but PostgreSQL's) a schema history file in the landing."""
    # No collections named: every table (the signal table among them), as Debezium does by default.
    tables = [*s.collections, s.signal_table] if s.signal_table not in s.collections else list(s.collections)
    include = {"table.include.list": _include_list(tables)} if s.collections else {}
    if connector == "postgresql":
        return {
            "database.dbname": database,
            "plugin.name": "pgoutput",
            "slot.name": s.slot,
            "publication.name": s.publication,
            "publication.autocreate.mode": "filtered",
            **include,
        }
    history = {
        "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
        "schema.history.internal.file.filename": str(local_copy(history_file(s.landing, s.name))),
    }
    if connector == "sqlserver":
        return {"database.names": database, "database.encrypt": "false", **include, **history}
    if connector == "oracle":
        return {"database.dbname": database, **include, **history}
    return {
        "database.server.id": "5400",
        "database.include.list": ",".join(sorted({t.split(".")[0] for t in tables})),
        **include,
        **history,
    }
