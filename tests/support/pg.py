"""Helpers for tests on a real PostgreSQL: statements, a drain of the capture, signals, the engine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa

from cdc_backfill.capture.postgres.loop import PostgresCapture
from cdc_backfill.signals.model import Signal
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.snapshot.engine import SnapshotEngine
from tests.support.workload import Writers


def plain_url(url: str) -> str:
    """A test server's URL as people write it: ``postgresql://`` with no driver named."""
    return "postgresql://" + url.split("://", 1)[1]


def sql(url: str, *statements: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for s in statements:
            conn.execute(sa.text(s))
    engine.dispose()


def drain(url: str, landing: Path) -> None:
    """Land everything committed so far, as the capture does: the typed log."""
    PostgresCapture(url, landing).run()


def send(url: str, *collections: str, **kw: object) -> str:
    """An execute-snapshot with a generated id; returns the id."""
    store = SignalStore(url)
    store.init()
    sig = Signal(f"sig-{len(store.rows())}", "execute-snapshot", collections, "incremental", **kw)  # type: ignore[arg-type]
    store.send(sig)
    return sig.id


def send_as(url: str, sid: str, *collections: str, **kw: object) -> None:
    """An execute-snapshot with the id given."""
    store = SignalStore(url)
    store.init()
    store.send(Signal(sid, "execute-snapshot", collections, "incremental", **kw))  # type: ignore[arg-type]


def eager_engine(url: str, landing: Path, **kw: object) -> SnapshotEngine:
    """An engine that looks at the signals before every chunk."""
    e = SnapshotEngine(url, landing, **kw)  # type: ignore[arg-type]
    e.control_interval = 0.0
    return e


class InWindow:
    """Inside every window of ``orders``: change the chunk's first row from another connection, so each
    chunk has a READ that the stream supersedes (random writers alone rarely hit a key while its
    few-millisecond window is open). With ``writers``, every window of any collection also waits until
    the writers have committed a change inside it: the overlap of writers and snapshot is certain
    instead of a matter of the machine's speed (``paced`` counts those windows). ``action=None``: no
    change of ``orders`` of its own."""

    def __init__(
        self,
        url: str,
        action: str | None = "UPDATE orders SET status = 'in-window' WHERE id = "
        "(SELECT min(id) FROM orders WHERE id > :after)",
        writers: Writers | None = None,
    ) -> None:
        self.sa_engine = sa.create_engine(url)
        self.action = action
        self.writers = writers
        self.calls = 0
        self.paced = 0

    def __call__(self, shape, after) -> None:  # type: ignore[no-untyped-def]
        if shape.collection == "public.orders" and self.action:
            with self.sa_engine.begin() as conn:
                conn.execute(sa.text(self.action), {"after": int(after[0]) if after else 0})
            self.calls += 1
        if self.writers is not None:
            self.writers.change_from_now()
            self.paced += 1


def snapshot_under_writers(
    url: str, landing: Path, collections: list[str], chunk_size: int, seed_value: int
) -> None:
    """The central case: the stream drained, then a snapshot of ``collections`` (2 readers; inside every
    window a change of the chunk's first order and a writer's change) while writers insert, update,
    delete and change keys; then drained again."""
    drain(url, landing)
    writers = Writers(url, seed_value=seed_value).start()
    try:
        send(url, *[c.replace(".", "\\.") for c in collections], chunk_size=chunk_size)
        SnapshotEngine(url, landing, readers=2, window_hook=InWindow(url, writers=writers)).run()
    finally:
        writers.stop()
    drain(url, landing)


def writers_in_every_window(monkeypatch: Any, url: str, writers: Writers) -> None:
    """The DAG's snapshot tasks wait inside every window for a change of ``writers``: the overlap of
    writers and snapshot is certain on any machine, not a matter of how many changes fit into it."""
    from cdc_backfill.snapshot.engine import SnapshotEngine

    engine_init = SnapshotEngine.__init__

    def paced(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        engine_init(self, *args, **kwargs)
        self.window_hook = InWindow(url, action=None, writers=writers)

    monkeypatch.setattr(SnapshotEngine, "__init__", paced)
