"""Seeded writers that keep changing the source while a snapshot runs: inserts inside and beyond the
key range, updates, deletes, key changes, TOAST-only updates and transactions spanning several windows."""

from __future__ import annotations

import random
import threading
import time

import sqlalchemy as sa

from cdc_backfill.background import Background

SCHEMA = [
    "CREATE TABLE orders (id bigint PRIMARY KEY, status text NOT NULL, amount numeric(12,2), doc text)",
    "CREATE TABLE lines (order_id int, line_no int, qty int, PRIMARY KEY (order_id, line_no))",
    "CREATE TABLE words (w text {collation} PRIMARY KEY, n int)",
]
BIG = "(SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 100))"  # TOASTed, incompressible
WORDS = [
    "apple",
    "Apple",
    "_under",
    "Zebra",
    "zebra",
    "émile",
    "Eve",
    "eve",
    "-dash",
    "10",
    "9",
    "ä",
    "b",
    "B",
]


def seed(
    url: str, orders: int = 2000, lines: int = 2000, collation: str | None = None, docs_every: int = 50
) -> None:
    """The three tables; ``collation`` for the text key of ``words`` (an ICU one orders unlike Python);
    every ``docs_every``-th order has a TOASTed ``doc``."""
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for stmt in SCHEMA:
            conn.execute(sa.text(stmt.format(collation=f'COLLATE "{collation}"' if collation else "")))
        # even ids only: writers insert odd ids inside every chunk's range, and ids beyond the largest
        conn.execute(sa.text(
            f"INSERT INTO orders SELECT i * 2, 'new', i * 1.25, CASE WHEN i % {docs_every} = 0 THEN {BIG} END "
            f"FROM generate_series(1, {orders}) i"))  # fmt: skip
        conn.execute(sa.text(f"INSERT INTO lines SELECT i / 4, i % 4, i FROM generate_series(1, {lines}) i"))
        conn.execute(
            sa.text(
                "INSERT INTO words SELECT w || i, i FROM unnest(CAST(:w AS text[])) w, generate_series(1, 60) i"
            ),
            {"w": WORDS},
        )
    engine.dispose()


class Writers(Background):
    """One thread of random changes, seeded; ``stop()`` waits for it to finish its transaction.

    Tests never count on how many changes happened to fit into a snapshot (that is the machine's speed):
    they wait for the changes they need with :meth:`change_from_now` and :meth:`wait_for_changes`."""

    name = "writers"

    def __init__(self, url: str, seed_value: int, max_order: int = 4000, toast_moves: bool = False) -> None:
        """``toast_moves``: also move keys of rows whose TOASTed ``doc`` stays unchanged (the stream
        leaves it out; a row moved before its chunk read it ends incomplete until it is re-read)."""
        super().__init__()
        self.sa_engine = sa.create_engine(url, pool_size=2)
        self.rng = random.Random(seed_value)
        self.max_order = max_order
        self.toast_moves = toast_moves
        self.ops = 0  # transactions committed
        self.changes = 0  # rows they changed (a no-op statement changes none and streams nothing)
        self._last_changing = 0  # the number (1, 2, ...) of the last committed transaction that changed rows
        self._moved = threading.Condition()

    def change_from_now(self, timeout: float = 120.0) -> None:
        """Block until a transaction that began after this call has committed a change. The thread runs
        one transaction after another, so any transaction numbered two past the count seen now began
        after it: called inside a window, that change commits inside the window."""
        with self._moved:
            target = self.ops + 2
            self._wait(lambda: self._last_changing >= target, timeout, "a change")

    def wait_for_changes(self, n: int, timeout: float = 120.0) -> None:
        """Block until ``n`` more rows have been changed and committed."""
        with self._moved:
            target = self.changes + n
            self._wait(lambda: self.changes >= target, timeout, f"{n} changes")

    def _wait(self, done, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
        ok = self._moved.wait_for(lambda: done() or self.errors or self.stopping, timeout)
        if self.errors:
            raise self.errors[0]
        assert ok and done(), f"the writers committed no {what} in {timeout:.0f} s"

    def stop(self) -> int:  # type: ignore[override]
        super().stop()
        return self.ops

    def close(self) -> None:
        self.sa_engine.dispose()

    def step(self) -> None:
        changed = 0
        with self.sa_engine.begin() as conn:
            long = self.rng.random() < 0.05
            for _ in range(self.rng.randint(3, 8) if long else 1):
                changed += self._one(conn)
                if long:
                    time.sleep(0.03)  # a transaction that spans several windows
        with self._moved:
            self.ops += 1
            self.changes += changed
            if changed:
                self._last_changing = self.ops
            self._moved.notify_all()

    def finished(self) -> None:
        with self._moved:
            self._moved.notify_all()

    def _one(self, conn: sa.Connection) -> int:
        """One random statement; the number of rows it changed."""
        r = self.rng.random()
        oid = self.rng.randint(1, self.max_order)
        changed = 0

        def q(sql: str, **p: object) -> None:
            nonlocal changed
            changed += conn.execute(sa.text(sql), p).rowcount

        if r < 0.2:
            q("INSERT INTO orders VALUES (:i, 'ins', :a, NULL) ON CONFLICT DO NOTHING", i=oid, a=oid / 3)
        elif r < 0.25:
            q(
                "INSERT INTO orders VALUES (:i, 'beyond', 1, NULL) ON CONFLICT DO NOTHING",
                i=self.max_order + oid,
            )
        elif r < 0.45:
            q("UPDATE orders SET status = 'upd', amount = amount + 1 WHERE id = :i", i=oid)
        elif r < 0.5:
            q("UPDATE orders SET amount = amount - 1 WHERE id IN (SELECT id FROM orders WHERE doc IS NOT NULL AND id >= :i ORDER BY id LIMIT 1)", i=oid)  # TOAST unchanged  # fmt: skip
        elif r < 0.6:
            q("DELETE FROM orders WHERE id = :i", i=oid)
        elif r < 0.62 or (r < 0.65 and not self.toast_moves):
            q("UPDATE orders SET id = :n WHERE id = :i AND NOT EXISTS (SELECT 1 FROM orders WHERE id = :n)",
              i=oid, n=self.rng.randint(1, self.max_order))  # a key change  # fmt: skip
        elif r < 0.65:  # a key change of a row whose TOASTed doc stays unchanged
            q("UPDATE orders SET id = :n WHERE id = (SELECT id FROM orders WHERE doc IS NOT NULL AND id >= :i "
              "ORDER BY id LIMIT 1) AND NOT EXISTS (SELECT 1 FROM orders WHERE id = :n)",
              i=oid, n=self.rng.randint(1, self.max_order))  # fmt: skip
        elif r < 0.75:
            q("INSERT INTO lines VALUES (:o, :l, 1) ON CONFLICT (order_id, line_no) DO UPDATE SET qty = lines.qty + 1",
              o=self.rng.randint(0, 600), l=self.rng.randint(0, 6))  # fmt: skip
        elif r < 0.8:
            q("DELETE FROM lines WHERE order_id = :o", o=self.rng.randint(0, 600))
        elif r < 0.85:
            q("UPDATE lines SET line_no = 11 WHERE order_id = :o AND line_no = 1 AND NOT EXISTS "
              "(SELECT 1 FROM lines WHERE order_id = :o AND line_no = 11)", o=self.rng.randint(0, 600))  # fmt: skip
        elif r < 0.92:
            w = self.rng.choice(WORDS) + str(self.rng.randint(1, 90))
            q("INSERT INTO words VALUES (:w, 1) ON CONFLICT (w) DO UPDATE SET n = words.n + 1", w=w)
        else:
            q("DELETE FROM words WHERE w = :w", w=self.rng.choice(WORDS) + str(self.rng.randint(1, 90)))
        return changed
