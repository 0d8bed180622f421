"""Shared by the torture tests (the stream from the native capture, and from Kafka): the tables, and the
writes inside the snapshot's windows."""

from __future__ import annotations

import random

import sqlalchemy as sa

from tests.support.pg import InWindow
from tests.support.workload import Writers

TABLES = ["public.orders", "public.lines", "public.words"]


class Torture(InWindow):
    """Inside windows: the in-window update of ``orders`` (so READs are dropped) and, once, at a random
    window, a truncate of ``lines`` followed by fresh rows in the same transaction."""

    def __init__(self, url: str, rng: random.Random, writers: Writers) -> None:
        super().__init__(url, writers=writers)
        self.truncate_at = rng.randint(2, 12)
        self.windows = 0

    def __call__(self, shape, after) -> None:  # type: ignore[no-untyped-def]
        self.windows += 1
        if self.windows == self.truncate_at:
            with self.sa_engine.begin() as conn:
                conn.execute(sa.text("TRUNCATE lines"))
                conn.execute(
                    sa.text("INSERT INTO lines SELECT i / 3, i % 3, -i FROM generate_series(1, 90) i")
                )
        super().__call__(shape, after)
