"""Hooks: turn an Airflow connection into what the package needs, and own the I/O against the source.

Operators, the sensor, the trigger and the progress page call these methods; none of them opens a
connection of its own. The SQL they run lives with its tables (``signals.queries``, ``snapshot.queries``,
the stores); the hook hands them its connections and closes them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseHook

from cdc_backfill.airflow.defaults import SOURCE_CONN_ID
from cdc_backfill.airflow.plans import KAFKA_CONN_ID
from cdc_backfill.airflow.provider import SOURCE_CONN_TYPE, SOURCE_FORM, SOURCE_HOOK_NAME, connection_url
from cdc_backfill.config import config_files, mask_url, resolve_source, source_engine, sqlalchemy_url
from cdc_backfill.kafka.topics import KafkaError
from cdc_backfill.lakepath import lake_path

if TYPE_CHECKING:
    import sqlalchemy as sa

    from cdc_backfill.capture.postgres.loop import CaptureStats
    from cdc_backfill.kafka.topics import Broker
    from cdc_backfill.signals.model import Signal
    from cdc_backfill.signals.store import SignalStore
    from cdc_backfill.signals.validate import ValidatedSignal
    from cdc_backfill.snapshot.engine import SnapshotEngine
    from cdc_backfill.snapshot.progress import RangeProgress

log = logging.getLogger(__name__)


class SourceNotConfigured(RuntimeError):
    """Neither a connection id nor the project's configuration names the source."""


def missing_connection(conn_id: str) -> str:
    """What to do when a source connection is not defined (pure)."""
    return (
        f"the Airflow connection {conn_id!r} is not defined: create it with `airflow connections add "
        f"{conn_id} --conn-uri 'postgresql://USER:PASSWORD@HOST:5432/DATABASE'`, or set "
        f"AIRFLOW_CONN_{conn_id.upper()} to that URI in the environment of Airflow's scheduler and workers "
        "(`make airflow` does it from CDC_BACKFILL_SOURCE_URL or the config file)"
    )


def no_source() -> str:
    """What to do when nothing names the source (pure but for the config files' names)."""
    files = " or ".join(str(p) for p in config_files())
    return (
        f"no source: create the Airflow connection {SOURCE_CONN_ID} (`airflow connections add {SOURCE_CONN_ID} "
        "--conn-uri 'postgresql://USER:PASSWORD@HOST:5432/DATABASE'`), or set CDC_BACKFILL_SOURCE_URL in the "
        f'environment of Airflow\'s scheduler and workers, or write [source] url = "..." in {files}'
    )


def source_without_connection(conn_id: str) -> str:
    """The URL standing in for a connection that is not defined: the project's configured source, only
    for the default id (a DAG run naming another id means that database, never a silent substitute)."""
    setting = resolve_source() if conn_id == SOURCE_CONN_ID else None
    if setting is None:
        raise SourceNotConfigured(missing_connection(conn_id))
    log.info("no connection %s: the source from %s", SOURCE_CONN_ID, setting.origin)
    return setting.url


@contextmanager
def disposed(sa_engine: sa.Engine) -> Iterator[sa.Engine]:
    """The SQLAlchemy engine, its pool closed on exit: each call here makes one of its own, and none of its
    connections to the source may outlive the call."""
    try:
        yield sa_engine
    finally:
        sa_engine.dispose()


class SourceSignals:
    """What the hook's tasks ask of the signal tables and the engine's progress: each method opens the
    signal store on the hook's source, hands its connection to the reads of ``signals.queries`` and
    ``snapshot.queries`` (or to the store), and closes it. Mixed into ``CdcSourceHook``, which says where
    the source is and makes the store."""

    def signal_store(self, url: str | None = None) -> SignalStore:
        raise NotImplementedError  # CdcSourceHook's factory

    @contextmanager
    def _store(self) -> Iterator[SignalStore]:
        store = self.signal_store()
        with disposed(store.sa_engine):
            yield store

    @contextmanager
    def _connection(self) -> Iterator[tuple[SignalStore, sa.Connection]]:
        """The signal store and one connection of its SQLAlchemy engine, for the reads of ``signals.queries``."""
        with self._store() as store, store.sa_engine.connect() as conn:
            yield store, conn

    def check_signal(self, signal: Signal) -> tuple[ValidatedSignal, str]:
        """(the signal resolved against the catalog, the signal table's collection name); nothing written.
        Raises SignalError when the signal would be refused."""
        with self._store() as store:
            return store.check(signal), store.signal_table

    def send_signal(self, signal: Signal) -> tuple[ValidatedSignal, bool]:
        """(resolved signal, sent now). A signal whose id is already in the signal table (a retry of the
        task) is checked again, not sent twice."""
        from cdc_backfill.signals.queries import signal_written

        with self._store() as store:
            with store.sa_engine.connect() as conn:
                if signal_written(conn, store.signal, signal.id):
                    return store.check(signal), False
            return store.send(signal), True

    def signal_status(self, signal_id: str) -> tuple[str, str | None] | None:
        """(status, reason) of a signal, or None when nobody has recorded one yet."""
        from cdc_backfill.signals.queries import signal_status

        with self._connection() as (store, conn):
            return signal_status(conn, store.status, signal_id)

    def unfinished_snapshots(self) -> dict[str, list[str]]:
        """Execute signals not finished yet (accepted, running, paused), with their collections."""
        from cdc_backfill.signals.queries import unfinished_snapshots

        with self._store() as store:
            return unfinished_snapshots(store.list())

    def paused_signals(self) -> frozenset[str]:
        """The ids of signals whose status is paused."""
        with self._store() as store:
            return store.paused()

    def progress_ranges(
        self, signal_id: str | None = None, collection: str | None = None
    ) -> list[RangeProgress]:
        """The engine's progress rows (none when the engine never ran against this source)."""
        from cdc_backfill.snapshot.queries import read_progress

        with self._store() as store:
            return read_progress(store.sa_engine, store.schema, signal_id, collection)

    def signal_table_name(self) -> str:
        """The signal table as ``schema.table``, its schema resolved on the source."""
        with self._store() as store:
            return store.signal_table

    def write_marker(self) -> str:
        """The id of a marker row committed now into the signal table (``SignalStore.write_marker``): on
        the stream after everything committed before it."""
        with self._store() as store:
            return store.write_marker()

    def window_rows(self) -> list[tuple[str, str, str | None]]:
        """Every watermark row of the signal table, ``(id, type, data)``."""
        from cdc_backfill.signals.queries import window_rows

        with self._connection() as (store, conn):
            return window_rows(conn, store.signal)


class CdcSourceHook(SourceSignals, BaseHook):
    """The source database of a snapshot, from an Airflow connection or the project's config.

    An empty ``source_conn_id`` falls back to ``CDC_BACKFILL_SOURCE_URL`` / the config file.
    """

    conn_name_attr = "source_conn_id"
    default_conn_name = SOURCE_CONN_ID
    conn_type = SOURCE_CONN_TYPE  # the provider's form; a connection of the postgres type works as well
    hook_name = SOURCE_HOOK_NAME

    get_ui_field_behaviour = classmethod(lambda cls: SOURCE_FORM)  # the connection type's form

    def __init__(
        self, source_conn_id: str = SOURCE_CONN_ID, signal_table: str | None = None, **kwargs: object
    ) -> None:
        super().__init__(**kwargs)
        self.source_conn_id = source_conn_id
        self.signal_table = signal_table or None

    # ------------------------------------------------------------ where the source is

    def get_source_url(self) -> str | None:
        """The connection's URL; the project's configured source when the id is empty, or is the
        default ``cdc_source`` and no such connection is defined; None when neither names one."""
        from airflow.exceptions import AirflowNotFoundException

        if not self.source_conn_id:
            setting = resolve_source()
            return setting.url if setting else None
        try:
            conn = self.get_connection(self.source_conn_id)
        except AirflowNotFoundException:
            return source_without_connection(self.source_conn_id)
        return sqlalchemy_url(connection_url(conn.get_uri(), conn.conn_type))

    def require_source_url(self) -> str:
        url = self.get_source_url()
        if url is None:
            raise SourceNotConfigured(no_source())
        return url

    def describe(self) -> str:
        """The source for logs, password masked."""
        url = self.get_source_url()
        return mask_url(url) if url else "(not configured)"

    # ------------------------------------------------------------ signals and progress (SourceSignals)

    def signal_store(self, url: str | None = None) -> SignalStore:
        """A signal store of its own (the caller disposes its SQLAlchemy engine); prefer the methods of
        ``SourceSignals``."""
        from cdc_backfill.signals.store import SignalStore

        return SignalStore(url or self.require_source_url(), self.signal_table)

    # ------------------------------------------------------------ the stream

    def emit_fence(self, label: str) -> int:
        """Write a fence into the stream (``capture.fence``), after everything this process committed
        before (the close watermarks). Returns the message's LSN."""
        from cdc_backfill.capture.fence import emit_fence

        with disposed(source_engine(self.require_source_url())) as sa_engine:
            return emit_fence(sa_engine, label)

    def debezium_drain(self, landing: Path, until: tuple[str, ...] = (), max_seconds: float = 6 * 3600.0):  # type: ignore[no-untyped-def]
        """Run Debezium's connector (embedded, in this process) until everything committed so far has
        landed; with ``until``, first until Debezium said those snapshots (signal ids) ended."""
        from cdc_backfill.capture.debezium.preflight import start

        return start(
            self.debezium_settings(landing), drain=True, until_snapshots=until, max_seconds=max_seconds
        )

    def debezium_settings(self, landing: Path):  # type: ignore[no-untyped-def]
        """Debezium's connector for this source, landing into ``landing``: every table, this signal table."""
        from cdc_backfill.capture.debezium.settings import DebeziumSettings
        from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE

        url = self.require_source_url()
        return DebeziumSettings(url, (), self.signal_table or DEFAULT_SIGNAL_TABLE, lake_path(landing))

    def ensure_capture(
        self,
        landing: Path,
        slot: str | None = None,
        publication: str | None = None,
        collections: list[str] | None = None,
    ) -> list[str]:
        """Create the capture's publication and slot when missing, so that the stream holds every change
        and watermark from now on (a snapshot must not start before its windows can be captured)."""
        capture = self.capture(landing, slot, publication, collections)
        with disposed(capture.sa_engine):
            return capture.setup()

    def capture(
        self,
        landing: Path,
        slot: str | None = None,
        publication: str | None = None,
        collections: list[str] | None = None,
    ) -> Any:
        from cdc_backfill.capture.postgres.loop import DEFAULT_PUBLICATION, DEFAULT_SLOT, PostgresCapture

        return PostgresCapture(
            self.require_source_url(),
            lake_path(landing),
            slot=slot or DEFAULT_SLOT,
            publication=publication or DEFAULT_PUBLICATION,
            collections=collections or None,
            signal_table=self.signal_table,
        )

    def drain(
        self,
        landing: Path,
        slot: str | None = None,
        publication: str | None = None,
        collections: list[str] | None = None,
        max_seconds: float = 3600.0,
    ) -> CaptureStats:
        """Land everything committed until now. Raises SlotInUse while another capture streams."""
        return self.capture(landing, slot, publication, collections).run(
            follow=False, max_seconds=max_seconds
        )

    # ------------------------------------------------------------ snapshot and verify

    @contextmanager
    def snapshot_engine(
        self, landing: Path, readers: int, signal_id: str, collection: str, chunk_compression: str = "auto"
    ) -> Iterator[SnapshotEngine]:
        """The native snapshot engine for one collection of one signal; its connections close on exit."""
        from cdc_backfill.snapshot.engine import SnapshotEngine

        snapshot = SnapshotEngine(
            self.require_source_url(),
            lake_path(landing),
            readers=readers,
            chunk_compression=chunk_compression,
            signal_table=self.signal_table,
            signal_id=signal_id,
            collection=collection,
        )
        with disposed(snapshot.sa_engine):
            yield snapshot

    def verify(
        self,
        state_dir: Path,
        collections: Sequence[str],
        ranges: int,
        master: str,
        landing: Path | None = None,
        capture: str | None = None,
    ) -> list[dict[str, Any]]:
        """One report per collection (see ``airflow.verifying``), reading the source on one engine, at
        one position where ``capture`` can make ``landing`` pass it."""
        from cdc_backfill.airflow.verifying import verify_collections

        url = self.require_source_url()
        with disposed(source_engine(url, pool_pre_ping=True)) as sa_engine:
            return verify_collections(
                url, sa_engine, lake_path(state_dir), collections, ranges, master,
                landing=landing, capture=capture, signal_table=self.signal_table,
            )  # fmt: skip


def missing_kafka_connection(conn_id: str) -> str:
    """What to do when the Kafka connection is not defined (pure)."""
    return (
        f"the Airflow connection {conn_id!r} is not defined: create it with `airflow connections add "
        f'{conn_id} --conn-type kafka --conn-extra \'{{"bootstrap.servers": "HOST:9092"}}\'` (the extra '
        "takes the broker's TLS and SASL settings too, as librdkafka names them)"
    )


class CdcKafkaHook(BaseHook):
    """The Kafka broker a snapshot's stream comes through (Debezium in Kafka Connect, DataWorks), from an
    Airflow connection of the Kafka provider's type: its extra holds librdkafka's settings,
    ``bootstrap.servers`` first. Its secrets reach a job through its environment, never its arguments."""

    conn_name_attr = "kafka_conn_id"
    default_conn_name = KAFKA_CONN_ID
    conn_type = "kafka"
    hook_name = "cdc_backfill Kafka"

    def __init__(self, kafka_conn_id: str = KAFKA_CONN_ID, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.kafka_conn_id = kafka_conn_id or KAFKA_CONN_ID

    def broker(self) -> Broker:
        """The broker and its client settings (KafkaError when the connection is missing or has no
        ``bootstrap.servers``)."""
        from airflow.exceptions import AirflowNotFoundException

        from cdc_backfill.kafka.topics import Broker

        try:
            conn = self.get_connection(self.kafka_conn_id)
        except AirflowNotFoundException:
            raise KafkaError(missing_kafka_connection(self.kafka_conn_id)) from None
        return Broker.from_client_config(conn.extra_dejson, f"the Airflow connection {self.kafka_conn_id!r}")

    def partitions(self, topics: str) -> tuple[Broker, int]:
        """The broker, and how many partitions the topics ``topics`` matches have: KafkaError when the
        broker cannot be reached or none matches."""
        from cdc_backfill.kafka.topics import partitions

        broker = self.broker()
        return broker, len(partitions(broker, topics))

    def signal_topic(self, topics: str, signal_table: str) -> tuple[str, dict[int, int]]:
        """(the signal table's topic, each of its partitions' end offset now)."""
        from cdc_backfill.kafka.delivered import end_offsets, signal_topic

        broker = self.broker()
        topic = signal_topic(broker, topics, signal_table)
        return topic, end_offsets(broker, topic)

    def row_delivered(self, topic: str, row: str, since: dict[int, int]) -> bool:
        from cdc_backfill.kafka.delivered import row_delivered

        return row_delivered(self.broker(), topic, row, since)

    def snapshot_end(self, topics: str, signal_id: str) -> str | None:
        """COMPLETED or ABORTED once a notification topic among ``topics`` says how Debezium's snapshot
        ``signal_id`` ended; None before."""
        from cdc_backfill.kafka.delivered import snapshot_end

        return snapshot_end(self.broker(), topics, signal_id)
