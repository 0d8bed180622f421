"""The snapshot engine scoped to one collection of one signal, so that each mapped Airflow task runs only
its own share and several tasks (collections) run side by side without stepping on each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cdc_backfill.snapshot.engine import SnapshotEngine


class ScopedSnapshotEngine(SnapshotEngine):
    def __init__(self, url: str, landing: Path, *, signal_id: str, collection: str, **kwargs: Any) -> None:
        super().__init__(url, landing, **kwargs)
        self.signal_id = signal_id
        self.collection = collection

    @property
    def stop_requested(self) -> bool:
        return self._stop_requested

    def pending_work(self) -> list[Any]:
        return [
            (sig, plan)
            for sig, plan in super().pending_work()
            if sig.id == self.signal_id and plan.collection == self.collection
        ]
