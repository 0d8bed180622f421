"""The snapshot's statuses, in one place (pure): an execute signal's statuses, its ranges' statuses,
how each moves, and how a collection's and a signal's status roll up from their ranges'. The engine, the
signal store, the CLI, Airflow and the progress page all read it from here.

An execute signal (the signal status table)::

    received --(validated)--> accepted --(a range started)--> running --(every range ended)--> done
        \\--(refused)--> rejected          \\      |  ^                                    \\-> stopped
                                           pause|  |resume                                  \\-> failed
                                                v  |
                                               paused

A range (the progress table)::

    pending --> running --> done       (a stop: stopped; an error: failed)

A collection has the status of its ranges rolled up (:func:`rollup`); a signal, of all its collections'
ranges (:func:`signal_rollup`). Values are plain strings in the tables: the enums are ``str``.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from enum import StrEnum


class SignalStatus(StrEnum):
    RECEIVED = "received"  # in the table, not yet seen by the engine
    ACCEPTED = "accepted"
    RUNNING = "running"
    PAUSED = "paused"
    DONE = "done"
    STOPPED = "stopped"
    FAILED = "failed"
    REJECTED = "rejected"


class RangeStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    STOPPED = "stopped"
    FAILED = "failed"


# An execute signal's statuses while it has work (``received``: not yet seen, work to come).
ACTIVE: tuple[SignalStatus, ...] = (SignalStatus.ACCEPTED, SignalStatus.RUNNING, SignalStatus.PAUSED)
UNFINISHED: tuple[RangeStatus, ...] = (RangeStatus.PENDING, RangeStatus.RUNNING)
# A range's statuses once it has no work left; a collection's too (rolled up).
FINISHED: tuple[RangeStatus, ...] = (RangeStatus.DONE, RangeStatus.STOPPED, RangeStatus.FAILED)


def rollup(statuses: Iterable[str], chunks: int = 0, paused: bool = False) -> str:
    """One collection's status from its ranges' statuses: the one rule the CLI, the Airflow operators
    and the progress page share.

    While any range still has work, the collection is ``paused`` (its signal is), ``running`` (a range
    started or finished, or a chunk is done) or ``pending``; a range that failed meanwhile shows in the
    reason, not as the status, because the others go on. Once every range finished: ``failed`` beats
    ``stopped`` beats ``done``. No ranges at all: ``not-started``.
    """
    seen = set(statuses)
    if not seen:
        return "not-started"
    if seen & set(UNFINISHED):
        if paused:
            return SignalStatus.PAUSED
        started = seen & {RangeStatus.RUNNING, *FINISHED}
        return RangeStatus.RUNNING if chunks or started else RangeStatus.PENDING
    return next(s for s in (RangeStatus.FAILED, RangeStatus.STOPPED, RangeStatus.DONE) if s in seen)


def signal_rollup(statuses: Collection[str], current: str, all_planned: bool) -> str:
    """An execute signal's status from the statuses of all its collections' ranges.

    Running while a collection is not planned yet or a range still has work (keeping ``current`` when
    nothing was planned at all); once all finished: ``failed`` or ``stopped`` only when every range
    ended so, else ``done`` (the reason names the collections that failed or stopped)."""
    seen = set(statuses)
    if not all_planned or seen & set(UNFINISHED):
        return SignalStatus.RUNNING if seen else current
    if seen == {RangeStatus.FAILED}:
        return SignalStatus.FAILED
    if seen == {RangeStatus.STOPPED}:
        return SignalStatus.STOPPED
    return SignalStatus.DONE
