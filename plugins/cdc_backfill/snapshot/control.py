"""What the operator asked for, read from the signal table between chunks: pause and resume, stops,
which collections still have work, and each execute signal's status and progress (docs/design.md §2, §4)."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from cdc_backfill.signals.marks import ENDED_SUFFIX, ended_data
from cdc_backfill.signals.model import EXECUTE, PAUSE, RESUME, SNAPSHOT_ENDED, STOP, Signal, SignalError
from cdc_backfill.signals.statuses import ACTIVE, FINISHED, RangeStatus, SignalStatus, signal_rollup
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.signals.validate import CollectionPlan, validate
from cdc_backfill.snapshot.progress import ProgressStore

log = logging.getLogger(__name__)


@dataclass
class Control:
    """What the operator asked for, read from the signals between chunks."""

    paused: bool = False
    stopped: set[tuple[str, str]] | None = None  # (signal id, collection) pairs that must stop


class SignalControl:
    """Reads the signals and keeps the statuses of the signal table and the progress table in step."""

    def __init__(self, sa_engine: sa.Engine, signals: SignalStore, progress: ProgressStore) -> None:
        self.sa_engine = sa_engine
        self.signals = signals
        self.progress = progress

    def ordered_statuses(self) -> list[Any]:
        st = self.signals.status
        with self.sa_engine.connect() as conn:
            return list(conn.execute(sa.select(st).order_by(st.c.received_at, st.c.signal_id)))

    def parsed(self) -> dict[str, Signal]:
        return {sid: s for sid, s in self.signals.read() if isinstance(s, Signal)}

    def apply(self) -> Control:
        """Review new signals, apply stops, and work out whether the engine is paused."""
        self.signals.review_new()
        statuses = self.ordered_statuses()
        parsed = self.parsed()
        paused = False
        for row in statuses:
            sig = parsed.get(row.signal_id)
            if sig is None:
                continue
            if sig.type == PAUSE:
                paused = True
            elif sig.type == RESUME:
                paused = False
            if sig.type in (PAUSE, RESUME) and row.status == SignalStatus.ACCEPTED:
                self.signals.set_status(sig.id, SignalStatus.DONE)
            if sig.type == STOP and row.status == SignalStatus.ACCEPTED:
                self.apply_stop(sig, statuses, parsed)
        stopped = {
            (p.signal_id, p.collection) for p in self.progress.ranges() if p.status == RangeStatus.STOPPED
        }
        return Control(paused=paused, stopped=stopped)

    def apply_stop(self, stop: Signal, statuses: list[Any], parsed: dict[str, Signal]) -> None:
        stop_at = next(r.received_at for r in statuses if r.signal_id == stop.id)
        patterns = [re.compile(p) for p in stop.collections]
        stopped = []
        for row in statuses:
            sig = parsed.get(row.signal_id)
            if sig is None or sig.type != EXECUTE or row.status not in ACTIVE:
                continue
            if row.received_at and stop_at and row.received_at > stop_at:
                continue  # a stop applies to snapshots asked for before it
            for coll in json.loads(row.collections or "[]"):
                if not patterns or any(p.fullmatch(coll) for p in patterns):
                    self.end_collection(sig.id, coll, RangeStatus.STOPPED, f"stopped by {stop.id}")
                    stopped.append(coll)
            self.refresh_signal(sig.id)
        self.signals.set_status(
            stop.id, SignalStatus.DONE, reason=f"stopped: {', '.join(stopped) or 'nothing was running'}"
        )
        log.info("stop %s applied to %s", stop.id, ", ".join(stopped) or "nothing")

    def end_collection(self, signal_id: str, collection: str, status: str, reason: str) -> None:
        """Stop or fail a collection; one not started yet gets a single placeholder range, so the record
        says it must not start."""
        if not self.progress.ranges(signal_id, collection):
            self.progress.plan(signal_id, collection, [(0, None, None)], 0)
        self.progress.set_collection(signal_id, collection, status, reason)
        # into the stream: the reconcile then stops waiting for a done row this snapshot will never write
        self.signals.write_mark(SNAPSHOT_ENDED, ENDED_SUFFIX, ended_data(collection, signal_id, status))

    def refresh_signal(self, signal_id: str) -> None:
        """Roll the signal's ranges up into its status and progress in the signal's status table."""
        ranges = self.progress.ranges(signal_id)
        row = next((r for r in self.ordered_statuses() if r.signal_id == signal_id), None)
        if row is None:
            return
        planned = {r.collection for r in ranges}
        wanted = set(json.loads(row.collections or "[]"))
        status = signal_rollup([r.status for r in ranges], row.status, all_planned=not wanted - planned)
        progress = {
            "chunks": sum(r.chunks_done for r in ranges),
            "rows": sum(r.rows_read for r in ranges),
            "collections_done": sum(
                1 for c in planned if all(r.status == RangeStatus.DONE for r in ranges if r.collection == c)
            ),
            "collections": len(wanted),
        }
        failed = [f"{r.collection}: {r.reason}" for r in ranges if r.status == RangeStatus.FAILED]
        self.signals.set_status(signal_id, status, progress=progress, reason="; ".join(failed) or None)

    def mark_paused(self) -> None:
        for row in self.ordered_statuses():
            if row.status in (SignalStatus.ACCEPTED, SignalStatus.RUNNING) and row.type == EXECUTE:
                self.signals.set_status(row.signal_id, SignalStatus.PAUSED)

    def _fail_signal(self, row: Any, reason: str, finished: set[tuple[str, str]]) -> None:
        log.warning("signal %s cannot go on: %s", row.signal_id, reason)
        collections = json.loads(row.collections or "[]")
        for coll in collections:
            if (row.signal_id, coll) not in finished:
                self.end_collection(row.signal_id, coll, RangeStatus.FAILED, reason)
        if collections:
            self.refresh_signal(row.signal_id)
        else:
            self.signals.set_status(row.signal_id, SignalStatus.FAILED, reason=reason)

    def pending_work(self) -> list[tuple[Signal, CollectionPlan]]:
        """Accepted or running execute signals and their collections not finished yet, oldest first."""
        parsed = self.parsed()
        progress = self.progress.ranges()
        by_collection: dict[tuple[str, str], set[str]] = {}
        for p in progress:
            by_collection.setdefault((p.signal_id, p.collection), set()).add(p.status)
        finished = {k for k, statuses in by_collection.items() if statuses <= set(FINISHED)}
        catalog = None
        work = []
        for row in self.ordered_statuses():
            sig = parsed.get(row.signal_id)
            if sig is None or sig.type != EXECUTE or row.status not in ACTIVE:
                continue
            catalog = catalog or self.signals.catalog()
            try:
                validated = validate(sig, catalog, self.signals.protected)  # checked again before acting
            except SignalError as exc:  # e.g. its table was dropped since: this signal fails, not the run
                self._fail_signal(row, str(exc), finished)
                continue
            for plan in validated.plans:
                if (sig.id, plan.collection) not in finished:
                    work.append((sig, plan))
            for coll, reason in validated.errors.items():
                if (sig.id, coll) not in finished:
                    self.end_collection(sig.id, coll, RangeStatus.FAILED, reason)
            if not validated.plans:
                self.refresh_signal(sig.id)
        return work
