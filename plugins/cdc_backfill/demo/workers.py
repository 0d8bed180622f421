"""The demo's two background threads: a writer that keeps changing the sample tables and the capture
that keeps draining their change stream. Each stops when asked and raises what killed it then: the demo
must not pass with a dead writer or capture."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from cdc_backfill.background import Background
from cdc_backfill.config import source_engine


class DemoWriter(Background):
    """A seeded writer: one change per transaction (a few span several), paced so that it keeps going
    during the whole snapshot on a small machine."""

    name = "demo-writer"

    def __init__(self, url: str, rows: int, seed: int = 7, per_second: float = 400.0) -> None:
        super().__init__()
        self.sa_engine = source_engine(url, pool_size=1)
        self.rng = random.Random(seed)
        self.rows = rows
        self.seconds_between = 1.0 / per_second
        self.changes = 0

    def step(self) -> None:
        with self.sa_engine.begin() as conn:
            for _ in range(self.rng.choice([1, 1, 1, 1, 4])):
                self._one(conn)
                self.changes += 1

    def pause(self) -> float:
        return self.seconds_between

    def close(self) -> None:
        self.sa_engine.dispose()

    def stop(self) -> int:  # type: ignore[override]
        super().stop()
        return self.changes

    def _one(self, conn: sa.Connection) -> None:
        r, i = self.rng.random(), self.rng.randint(1, self.rows // 2 + 2000)
        q: Callable[..., Any] = lambda sql, **p: conn.execute(sa.text(sql), p)  # noqa: E731
        email = f"user{i}@example.org"
        if r < 0.2:
            q("INSERT INTO customers VALUES (:e, 'new', 'bronze', NULL) ON CONFLICT DO NOTHING", e=email)
        elif r < 0.4:
            q("UPDATE customers SET tier = 'platinum', name = name || '+' WHERE email = :e", e=email)
        elif r < 0.5:
            q("DELETE FROM customers WHERE email = :e", e=email)
        elif r < 0.55:  # a key change
            q("UPDATE customers SET email = :n WHERE email = :e AND NOT EXISTS "
              "(SELECT 1 FROM customers WHERE email = :n)", e=email, n=f"moved{i}@example.org")  # fmt: skip
        elif r < 0.75:
            q("INSERT INTO order_lines VALUES (:o, :l, 'SKU-new', 1, 9.99) ON CONFLICT (order_id, line_no) "
              "DO UPDATE SET qty = order_lines.qty + 1", o=i // 4, l=self.rng.randint(0, 5))  # fmt: skip
        elif r < 0.9:
            q(
                "DELETE FROM order_lines WHERE order_id = :o AND line_no = :l",
                o=i // 4,
                l=self.rng.randint(0, 3),
            )
        else:  # a key change of a composite key
            q("UPDATE order_lines SET line_no = line_no + 10 WHERE order_id = :o AND line_no = 0 AND NOT EXISTS "
              "(SELECT 1 FROM order_lines WHERE order_id = :o AND line_no = 10)", o=i // 4)  # fmt: skip


class Capturer(Background):
    """Drains the change stream again and again in a thread, as a deployed capture would follow it."""

    name = "demo-capture"
    join_seconds = 120.0

    def __init__(self, url: str, landing: Path) -> None:
        from cdc_backfill.capture.postgres.loop import PostgresCapture

        super().__init__()
        self.capture = PostgresCapture(url, landing)
        self.drains = 0

    def drain(self) -> None:
        self.capture.run()
        self.drains += 1

    def step(self) -> None:
        # a drain a second (the first after a second too), as the old loop's wait did
        if not self._stop.wait(1.0):
            self.drain()
