"""Work repeated in a thread: stop() waits for the step under way and raises what killed the thread."""

from __future__ import annotations

import threading

import pytest

from cdc_backfill.background import Background


class Counter(Background):
    def __init__(self, fail_at: int | None = None) -> None:
        super().__init__()
        self.steps = 0
        self.fail_at = fail_at
        self.closed = False
        self.ended = threading.Event()

    def step(self) -> None:
        self.steps += 1
        if self.steps == self.fail_at:
            raise RuntimeError("the source went away")

    def pause(self) -> float:
        return 0.001

    def finished(self) -> None:
        self.ended.set()

    def close(self) -> None:
        self.closed = True


def test_steps_repeat_until_stopped_and_close_follows() -> None:
    c = Counter().start()
    while c.steps < 3:
        pass
    c.stop()
    assert c.ended.is_set() and c.closed and c.errors == []
    steps = c.steps
    assert c.steps == steps  # nothing runs after stop()


def test_what_killed_the_thread_is_raised_by_stop() -> None:
    c = Counter(fail_at=2).start()
    assert c.ended.wait(10)
    with pytest.raises(RuntimeError, match="went away"):
        c.stop()
    assert c.closed
