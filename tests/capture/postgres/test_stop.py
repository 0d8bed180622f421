"""A stop while the capture reads a transaction: it waits for the commit, but not for ever.

A real server sends a committed transaction whole, so the loop is fed here by a cursor that gives a
transaction's begin and then nothing, or its changes without end: the cases a real server cannot be
made to show on demand.
"""

from __future__ import annotations

import os
import signal
import struct
import threading
import time
from typing import Any

import pytest

from cdc_backfill.capture.postgres import loop as postgres
from cdc_backfill.capture.postgres.loop import CaptureStats, PostgresCapture
from cdc_backfill.capture.postgres.stop import StopSignals


class _Message:
    def __init__(self, payload: bytes) -> None:
        self.payload = payload
        self.data_start = 0


class _Cursor:
    """Gives its messages in turn, then nothing (as a read with no data does)."""

    def __init__(self, *payloads: bytes) -> None:
        self.payloads = list(payloads)
        self.feedback: list[dict[str, Any]] = []

    def read_message(self) -> _Message | None:
        return _Message(self.payloads.pop(0)) if self.payloads else None

    def fileno(self) -> int:  # select() waits on it: stdin's descriptor never becomes readable here
        return 0

    def send_feedback(self, **kw: Any) -> None:
        self.feedback.append(kw)


class _Endless(_Cursor):
    """A transaction's begin, then messages that never end it (here: origins, which land nothing)."""

    def read_message(self) -> _Message | None:
        return _Message(self.payloads.pop(0)) if self.payloads else _Message(b"O" + bytes(8) + b"x\0")


class _Sink:
    due = False

    def begin(self, st: Any) -> None:
        pass

    def commit(self, end_lsn: int) -> None:
        pass


def _begin(final_lsn: int, xid: int) -> bytes:
    return b"B" + struct.pack(">QqI", final_lsn, 0, xid)


def _commit(end_lsn: int) -> bytes:
    return b"C" + struct.pack(">BQQq", 0, end_lsn - 1, end_lsn, 0)


def _loop() -> PostgresCapture:
    cap = PostgresCapture.__new__(PostgresCapture)  # the loop alone: no source, no landing
    cap.sink, cap.stats, cap._skip_to, cap._relations, cap._stop_at = _Sink(), CaptureStats(), (0,), {}, None
    cap._signals = None
    cap.request_stop()  # as the SIGTERM handler does
    return cap


def test_a_stop_inside_a_transaction_whose_rest_never_comes_returns_inside_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(postgres, "STOP_GRACE_SECONDS", 0.3)
    started = time.monotonic()
    state = _loop()._stream(_Cursor(_begin(1000, 7)), None, None)
    assert state.in_txn and state.xid == 7  # run() then rolls nothing: the whole transaction comes again
    assert time.monotonic() - started < 10
    assert "stopping inside transaction 7" in caplog.text


def test_a_stop_between_transactions_returns_outside_them() -> None:
    state = _loop()._stream(_Cursor(_begin(1000, 7), _commit(1010)), None, None)
    assert not state.in_txn


def test_a_stop_inside_a_transaction_whose_messages_keep_coming_still_returns_within_the_grace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(postgres, "STOP_GRACE_SECONDS", 0.3)
    started = time.monotonic()
    state = _loop()._stream(_Endless(_begin(1000, 7)), None, None)
    assert state.in_txn and state.xid == 7
    assert time.monotonic() - started < 10


def test_a_second_stop_returns_inside_the_transaction_at_once() -> None:
    cap = _loop()
    cap.request_stop()
    state = cap._stream(_Endless(_begin(1000, 7)), None, None)  # the grace is 15 s: not waited for
    assert state.in_txn


def test_stop_signals_are_counted_whichever_thread_the_kernel_hands_them_to() -> None:
    """A SIGTERM handled on another thread runs only the C-level handler there: the wakeup descriptor
    still counts it (the main thread's Python handler is never needed)."""
    before = signal.getsignal(signal.SIGTERM)
    with StopSignals() as stops:
        assert stops.received() == 0
        os.kill(os.getpid(), signal.SIGTERM)
        assert stops.received() == 1
        gone = threading.Event()
        other = threading.Thread(target=gone.wait)
        other.start()
        signal.pthread_kill(other.ident, signal.SIGTERM)  # handled on that thread
        gone.set()
        other.join()
        deadline = time.monotonic() + 5
        seen = 0
        while not seen and time.monotonic() < deadline:
            seen = stops.received()
        assert seen == 1
    assert signal.getsignal(signal.SIGTERM) is before  # put back as it was
