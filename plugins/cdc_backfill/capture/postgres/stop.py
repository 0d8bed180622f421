"""How a following capture learns it is asked to stop: SIGTERM and SIGINT, counted."""

from __future__ import annotations

import os
import signal
from typing import Any


class StopSignals:
    """SIGTERM and SIGINT, counted through the interpreter's wakeup descriptor: the C-level handler
    writes each signal's number there, whichever thread the kernel handed it to, and the loop reads
    them between transactions and while it waits (select() wakes on the descriptor). A Python-level
    handler alone was seen never to run here: SIGTERM caught and no longer pending, the handler never
    called, the loop waiting in select() for a minute (the follow test, under load)."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.fd = -1
        self._write = -1
        self._old_fd = -1
        self._handlers: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        self.fd, self._write = os.pipe()
        os.set_blocking(self.fd, False)
        os.set_blocking(self._write, False)
        # a handler must be set for the wakeup descriptor to be written; it has nothing else to do
        self._handlers = {s: signal.signal(s, _counted_by_the_wakeup_fd) for s in self.SIGNALS}
        self._old_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        return self

    def __exit__(self, *_: object) -> None:
        signal.set_wakeup_fd(self._old_fd)
        for s, handler in self._handlers.items():
            signal.signal(s, handler)
        os.close(self.fd)
        os.close(self._write)

    def received(self) -> int:
        """How many stop signals came since the last call."""
        try:
            data = os.read(self.fd, 256)
        except BlockingIOError:
            return 0
        return sum(1 for number in data if number in self.SIGNALS)


def _counted_by_the_wakeup_fd(*_: object) -> None:
    pass
