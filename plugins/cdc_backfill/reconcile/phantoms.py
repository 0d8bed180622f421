"""Which snapshots of a collection are finished, from what landed (docs/design.md §6 rule 7); pure.

The native engine writes two rows of its own into the signal table per collection of a snapshot: a
*start* row before it fixes the collection's largest key (its position is the snapshot's P0) and a
*done* row once every chunk of the collection has landed, naming how many chunk files landed (a stopped
or failed snapshot never writes it). Both reach the stream like the watermarks. A state version keeps,
per snapshot of its collection, what it has seen of them and how many of the snapshot's chunks it has
judged (:class:`SnapshotTrack`): once the done row is in and every chunk is judged, the run removes
the state's rows before P0 that the snapshot's condition covers, and the snapshot is decided. Runs
after a crash, a resume or a chunk landing late decide the same way, because all of it comes from the
stream and the chunk files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.key_conditions import Inexact, KeyCondition, key_condition
from cdc_backfill.signals.marks import K_CHUNKS, K_CONDITION, K_CONDITION_OMITTED, K_DIALECT, K_STATUS, Mark


@dataclass(frozen=True)
class SnapshotTrack:
    """One snapshot (``signal``) of a collection as a state version has seen it."""

    signal: str
    p0: tuple[int, ...] | None = None  # the latest start row's position
    chunks: int | None = None  # chunk files landed, from the done row: None until it is in
    judged: int = 0  # of this snapshot's chunks, judged so far
    condition: str | None = None
    condition_omitted: bool = False
    dialect: str = "postgresql"
    decided: str | None = None  # what the rule did, once it did (then nothing more happens)

    @property
    def complete(self) -> bool:
        return self.p0 is not None and self.chunks is not None and self.judged >= self.chunks

    def waiting(self) -> str:
        if self.chunks is None:
            return f"not finished: {self.judged} chunk(s) applied, no done row in the stream yet"
        if self.p0 is None:
            return "its start row is not in the stream read so far"
        return f"{self.judged} of {self.chunks} chunk(s) applied"

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"judged": self.judged}
        if self.p0 is not None:
            doc["p0"] = list(self.p0)
        if self.chunks is not None:
            doc["chunks"] = self.chunks
        if self.condition is not None:
            doc["condition"] = self.condition
        if self.condition_omitted:
            doc["condition_omitted"] = True
        if self.dialect != "postgresql":
            doc["dialect"] = self.dialect
        if self.decided is not None:
            doc["decided"] = self.decided
        return doc

    @classmethod
    def from_json(cls, signal: str, doc: Mapping[str, Any]) -> SnapshotTrack:
        p0 = doc.get("p0")
        return cls(
            signal,
            tuple(int(p) for p in p0) if p0 is not None else None,
            doc.get("chunks"),
            int(doc.get("judged", 0)),
            doc.get("condition"),
            bool(doc.get("condition_omitted", False)),
            doc.get("dialect", "postgresql"),
            doc.get("decided"),
        )


@dataclass(frozen=True)
class Removal:
    """Rows to remove in this run: before ``p0``, and satisfying ``condition`` (None: all)."""

    signal: str
    p0: tuple[int, ...]
    condition: KeyCondition | None


def advance(
    tracks: Mapping[str, SnapshotTrack], marks: Iterable[Mark], judged_now: Mapping[str, int]
) -> dict[str, SnapshotTrack]:
    """The tracks after a run that read ``marks`` and judged ``judged_now`` (signal -> chunks)."""
    out = dict(tracks)
    for m in sorted(marks, key=lambda m: m.position):
        t = out.get(m.signal) or SnapshotTrack(m.signal)
        if t.decided is not None:
            continue
        if m.kind == "ended":  # stopped or failed: its done row will never come, nothing is removed
            status = m.data.get(K_STATUS, "stopped")
            out[m.signal] = replace(t, decided=f"no removal: the snapshot {status} before it finished")
            continue
        if m.kind == "start":
            # a start row written again after a crash before the plan was recorded: the latest one
            # still precedes the plan the snapshot reads by. A Debezium snapshot's start (its signal
            # row) carries the condition; its done mark does not
            t = replace(
                t,
                p0=m.position if t.p0 is None else max(t.p0, m.position),
                condition=m.data.get(K_CONDITION, t.condition),
                dialect=str(m.data.get(K_DIALECT, t.dialect)),
            )
        else:
            chunks = m.data.get(K_CHUNKS)
            t = replace(
                t,
                chunks=int(chunks) if isinstance(chunks, int) else 0,
                condition=m.data.get(K_CONDITION, t.condition),
                condition_omitted=bool(m.data.get(K_CONDITION_OMITTED, False)),
                dialect=str(m.data.get(K_DIALECT, t.dialect)),
            )
        out[m.signal] = t
    for signal, n in judged_now.items():
        t = out.get(signal) or SnapshotTrack(signal)
        if t.decided is None:
            out[signal] = replace(t, judged=t.judged + n)
    return out


def decide(
    tracks: Mapping[str, SnapshotTrack], key: Iterable[PgColumn]
) -> tuple[dict[str, SnapshotTrack], list[Removal]]:
    """The removals this run makes, and the tracks with those snapshots decided (with what was done)."""
    key = list(key)
    out = dict(tracks)
    removals = []
    for signal, t in tracks.items():
        if t.decided is not None or not t.complete:
            continue
        assert t.p0 is not None
        if t.condition_omitted:
            out[signal] = replace(t, decided="no removal: its condition was too long to record")
            continue
        if t.condition is None:
            removals.append(Removal(signal, t.p0, None))
            out[signal] = replace(t, decided="rows before its start removed")
            continue
        try:
            cond = key_condition(t.condition, t.dialect, key)
        except Inexact as exc:
            out[signal] = replace(t, decided=f"no removal: {exc}")
            continue
        removals.append(Removal(signal, t.p0, cond))
        out[signal] = replace(t, decided="rows before its start that its condition selects removed")
    return out, removals


def report(tracks: Mapping[str, SnapshotTrack]) -> dict[str, str]:
    """Per snapshot, what the phantom rule did or what it waits for (the run summary's words)."""
    return {s: t.decided or f"waiting: {t.waiting()}" for s, t in sorted(tracks.items())}
