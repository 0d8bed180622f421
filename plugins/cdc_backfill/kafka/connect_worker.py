"""A Kafka Connect standalone worker running Debezium's PostgreSQL connector on 127.0.0.1, from Maven
Central's jars (``kafka.jars``), for the demo and the tests.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from cdc_backfill.kafka.delivered import end_offsets, row_delivered, topic_exists
from cdc_backfill.kafka.jars import jars
from cdc_backfill.kafka.process import (
    JavaProcess,
    free_port,
    java_command,
    log4j_config,
    tail,
    write_properties,
)
from cdc_backfill.kafka.topics import Broker

log = logging.getLogger(__name__)

CONNECT_HEAP = "-Xmx512m"
MARKER_TIMEOUT_S = 300.0
POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


def _slot_name(text: str) -> str:
    """A PostgreSQL slot or publication name from a topic prefix (lower case, digits, ``_``)."""
    return re.sub(r"[^a-z0-9_]", "_", text.lower())[:63]


class LocalConnect(JavaProcess):
    """A Kafka Connect standalone worker running Debezium's PostgreSQL connector on one database.

    Debezium streams from a slot (``snapshot.mode=no_data``: no initial snapshot; snapshots come as
    incremental ones from signal rows in ``signal_table``: Debezium's own with ``engine="debezium"``,
    the native engine's with ``engine="native"``, when Debezium only streams the signal table's rows,
    watermarks included), and writes every table's changes to
    ``<topic_prefix>.<schema>.<table>``, its notifications to ``<topic_prefix>.notifications``. The
    source offsets go to a file in ``folder``: a :meth:`start` after :meth:`stop` (or :meth:`kill`,
    which loses the last second's offsets and so replays them) resumes where the slot was."""

    what = "Kafka Connect worker"

    def __init__(
        self,
        bootstrap: str,
        pg_url: str,
        topic_prefix: str,
        tables: Sequence[str],
        signal_table: str = "public.cdc_signal",
        *,
        schemas: bool = True,
        folder: Path | None = None,
        name: str | None = None,
        slot: str | None = None,
        publication: str | None = None,
        chunk_size: int = 1024,
        engine: str = "debezium",
        rest_port: int | None = None,
        java_options: Sequence[str] = (CONNECT_HEAP,),
        extra: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(folder, "cdc-connect-")
        if len(signal_table.split(".")) != 2:
            # a name with a database or topic prefix is silently ignored: no snapshot would ever start
            raise ValueError(f"signal table {signal_table!r}: give schema.table (public.cdc_signal)")
        self.bootstrap = bootstrap
        self.pg_url = pg_url
        self.topic_prefix = topic_prefix
        self.tables = list(tables)
        self.signal_table = signal_table
        self.schemas = schemas
        self.name = name or topic_prefix
        self.slot = slot or _slot_name(topic_prefix)
        self.publication = publication or self.slot
        if engine not in ("debezium", "native"):
            raise ValueError(f"engine {engine!r}: debezium or native")
        self.chunk_size = chunk_size
        self.engine = engine
        self.rest_port = rest_port or free_port()
        self.java_options = list(java_options)
        self.extra = dict(extra or {})
        self.offsets_file = self.folder / "connect.offsets"

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    @property
    def notification_topic(self) -> str:
        return f"{self.topic_prefix}.notifications"

    def topic(self, table: str) -> str:
        """The topic of a table given as ``schema.table``."""
        return f"{self.topic_prefix}.{table}"

    def worker_properties(self) -> dict[str, str]:
        schemas = "true" if self.schemas else "false"
        return {
            "bootstrap.servers": self.bootstrap,
            "key.converter": JSON_CONVERTER,
            "value.converter": JSON_CONVERTER,
            "key.converter.schemas.enable": schemas,
            "value.converter.schemas.enable": schemas,
            "offset.storage.file.filename": str(self.offsets_file),
            # every second (60 s by default): a killed worker replays a second, not a minute
            "offset.flush.interval.ms": "1000",
            "listeners": f"http://127.0.0.1:{self.rest_port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.rest_port),
            # Every jar here has ServiceLoader manifests (the worker says so and suggests this): the
            # default scan of the whole class path cost 6 of the 12 s to RUNNING on 2 busy cores.
            "plugin.discovery": "service_load",
        }

    def connector_properties(self) -> dict[str, str]:
        u = urlsplit(self.pg_url)
        database = unquote(u.path.lstrip("/"))
        if not database:
            raise ValueError(f"the PostgreSQL URL names no database: add /<database> to {self.pg_url!r}")
        tables = [*self.tables, self.signal_table] if self.signal_table not in self.tables else self.tables
        props = {
            "name": self.name,
            "connector.class": POSTGRES_CONNECTOR,
            "tasks.max": "1",
            "topic.prefix": self.topic_prefix,
            "database.hostname": u.hostname or "127.0.0.1",
            "database.port": str(u.port or 5432),
            "database.user": unquote(u.username or ""),
            "database.password": unquote(u.password or ""),
            "database.dbname": database,
            "plugin.name": "pgoutput",
            "slot.name": self.slot,
            "publication.name": self.publication,
            "publication.autocreate.mode": "filtered",
            "snapshot.mode": "no_data",  # `never` no longer exists in 3.x; snapshots come from signals
            "table.include.list": ",".join(re.escape(t) for t in tables),
            "incremental.snapshot.chunk.size": str(self.chunk_size),
            "skipped.operations": "none",  # Debezium skips truncates by default ("t"): the state needs them
            "decimal.handling.mode": "string",  # exact text, not base64 bytes
            # the source's type names in the Connect schemas: a decimal written as text is typed numeric
            "column.propagate.source.type": ".*",
            "notification.enabled.channels": "sink",
            "notification.sink.topic.name": self.notification_topic,
            "poll.interval.ms": "50",  # 500 by default: idle WAL would cost half a second per chunk
        }
        if self.engine == "debezium":
            # Debezium reads the signal table's execute-snapshot rows and runs the snapshots; with the
            # native engine it only streams the table (its watermarks), or both would read every table
            props["signal.enabled.channels"] = "source"
            props["signal.data.collection"] = self.signal_table
        props.update(self.extra)
        return props

    def start(self, timeout: float = 180.0) -> LocalConnect:
        """Start the worker and wait until the connector and its task are RUNNING (raises
        KafkaLocalError with the log's tail, or the task's trace, if they do not)."""
        classpath = str(jars("connect") / "*")  # fetched before the clock of the start runs
        worker, connector = self.folder / "worker.properties", self.folder / "connector.properties"
        write_properties(worker, self.worker_properties())
        write_properties(connector, self.connector_properties())
        log4j = log4j_config(
            self.folder / "log4j2.properties",
            ["org.reflections", "org.apache.kafka.clients", "org.apache.kafka.common", "org.eclipse.jetty"],
        )
        self._launch(
            [
                java_command(), *self.java_options, f"-Dlog4j2.configurationFile={log4j}", "-cp", classpath,
                "org.apache.kafka.connect.cli.ConnectStandalone", str(worker), str(connector),
            ]
        )  # fmt: skip
        deadline = self.started_at + timeout
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise self._failed(f"the Kafka Connect worker exited at start (exit {self.proc.returncode})")
            status = self.status()
            if status is not None:
                states = [status.get("connector", {}).get("state")]
                states += [t.get("state") for t in status.get("tasks", [])]
                if "FAILED" in states:
                    traces = [t.get("trace", "") for t in status.get("tasks", []) if t.get("trace")]
                    why = tail(traces[0], 15) if traces else status.get("connector", {}).get("trace", "")
                    raise self._failed(f"connector {self.name} FAILED at start: {why}")
                if len(states) > 1 and all(s == "RUNNING" for s in states):
                    break
            if time.monotonic() > deadline:
                raise self._failed(f"connector {self.name} was not RUNNING in {timeout:.0f} s: {status}")
            time.sleep(0.25)
        self.ready_seconds = time.monotonic() - self.started_at
        log.info("connector %s RUNNING in %.1f s", self.name, self.ready_seconds)
        return self

    def caught_up(self, url: str, timeout: float = MARKER_TIMEOUT_S) -> None:
        """Return once the worker has delivered everything committed at ``url`` (a SQLAlchemy URL of its
        database) until now: a marker row committed now is on the signal table's topic
        (``kafka.delivered``). TimeoutError after ``timeout`` seconds."""
        from cdc_backfill.signals.store import SignalStore

        broker, topic = Broker(self.bootstrap), self.topic(self.signal_table)
        since = end_offsets(broker, topic) if topic_exists(broker, topic) else {}
        store = SignalStore(url, self.signal_table)
        try:
            marker = store.write_marker()
        finally:
            store.sa_engine.dispose()
        deadline = time.monotonic() + timeout
        while not (topic_exists(broker, topic) and row_delivered(broker, topic, marker, since)):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"the marker {marker} did not reach {topic} in {timeout:.0f} s: is Connect running?"
                )
            time.sleep(0.5)

    def status(self) -> dict[str, Any] | None:
        """``GET /connectors/<name>/status``, or None while the worker does not answer it."""
        try:
            with urllib.request.urlopen(f"{self.rest_url}/connectors/{self.name}/status", timeout=5) as r:
                return json.loads(r.read())  # type: ignore[no-any-return]
        except (OSError, ValueError):  # HTTPError (404 until it exists) is an OSError
            return None

    def __enter__(self) -> LocalConnect:
        return self.start()
