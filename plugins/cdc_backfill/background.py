"""A piece of work repeated in a daemon thread until asked to stop: the demo's writer and capture, the
tests' writers. ``stop()`` waits for the step under way (a writer's open transaction ends committed or
rolled back, never cut) and raises what killed the thread: a run must not pass with a dead writer or
capture behind it."""

from __future__ import annotations

import threading


class Background:
    """Subclasses give :meth:`step` (one unit of work) and may give :meth:`pause` (seconds between
    steps), :meth:`finished` (run in the thread as it ends) and :meth:`close` (after it ended)."""

    name = "background"
    join_seconds = 60.0

    def __init__(self) -> None:
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def step(self) -> None:
        raise NotImplementedError

    def pause(self) -> float:
        return 0.0

    def finished(self) -> None:
        """Called in the thread once it ends, whatever ended it."""

    def close(self) -> None:
        """Called by :meth:`stop` once the thread ended (or the wait for it did)."""

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def start(self) -> Background:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop after the step under way; raise the exception that ended the thread, if one did."""
        self._stop.set()
        self._thread.join(timeout=self.join_seconds)
        self.close()
        if self.errors:
            raise self.errors[0]

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.step()
                if self._stop.wait(self.pause()):
                    break
        except BaseException as exc:  # raised again by stop()
            self.errors.append(exc)
        finally:
            self.finished()
