"""``snapshot status``: per collection of each signal, chunks and rows done, rate, estimated time left."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass

from cdc_backfill.signals.statuses import UNFINISHED, RangeStatus, rollup
from cdc_backfill.signals.tables import utc_now
from cdc_backfill.snapshot.progress import STALE_SECONDS, RangeProgress


@dataclass(frozen=True)
class CollectionStatus:
    signal_id: str
    collection: str
    status: str
    ranges: int
    chunks: int
    rows: int
    rows_estimate: int
    rate: float  # rows per second since the collection started
    seconds_left: float | None
    reason: str | None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def summarize(
    ranges: list[RangeProgress], paused: Collection[str] = (), now: dt.datetime | None = None
) -> list[CollectionStatus]:
    """Per collection of each signal; ``paused``: the ids of signals whose status is paused. A collection
    with work left whose ranges nobody touched for STALE_SECONDS (the engine's heartbeat) before ``now``
    (UTC) is ``interrupted``: its engine died; `snapshot run` goes on from its last chunk."""
    now = now or utc_now()
    groups: dict[tuple[str, str], list[RangeProgress]] = {}
    for r in ranges:
        groups.setdefault((r.signal_id, r.collection), []).append(r)
    out = []
    for (sid, coll), rs in groups.items():
        status = rollup((r.status for r in rs), sum(r.chunks_done for r in rs), sid in paused)
        rows = sum(r.rows_read for r in rs)
        estimate = max(rows, sum(r.rows_estimate or 0 for r in rs))
        starts = [r.started_at for r in rs if r.started_at]
        ends = [r.updated_at for r in rs if r.updated_at]
        elapsed = (max(ends) - min(starts)).total_seconds() if starts and ends else 0.0
        rate = rows / elapsed if elapsed > 0 else 0.0
        reasons = sorted({r.reason for r in rs if r.reason})
        if status in UNFINISHED and ends and (now - max(ends)).total_seconds() > STALE_SECONDS:
            status = "interrupted"
            reasons.append(
                f"no progress since {max(ends):%Y-%m-%d %H:%M:%S} UTC: its engine stopped; "
                "`cdc-backfill snapshot run` goes on from the last chunk"
            )
        left = (estimate - rows) / rate if rate > 0 and status in UNFINISHED else None
        out.append(
            CollectionStatus(
                sid, coll, status, len(rs), sum(r.chunks_done for r in rs), rows, estimate, rate, left,
                "; ".join(reasons) or None,
            )
        )  # fmt: skip
    return out


def interrupted(statuses: Iterable[CollectionStatus]) -> dict[str, str]:
    """The signals a collection of which is interrupted (its engine died), with the reason: the signal
    table still says what the engine last wrote there."""
    out: dict[str, str] = {}
    for s in statuses:
        if s.status == "interrupted" and s.signal_id not in out:
            out[s.signal_id] = f"{s.collection}: {s.reason}"
    return out


def bar(done: int, total: int, width: int = 24) -> str:
    frac = 1.0 if total <= 0 else min(1.0, done / total)
    full = int(frac * width)
    return "[" + "#" * full + "." * (width - full) + f"] {frac * 100:5.1f}%"


def _progress(s: CollectionStatus) -> tuple[int, int]:
    """(done, total) for the bar: a collection that read everything is whole, whatever the estimate said
    (an estimate counts the table; a condition selects fewer rows)."""
    if s.status == RangeStatus.DONE:
        return s.rows, s.rows
    return s.rows, s.rows_estimate


def render(statuses: list[CollectionStatus]) -> str:
    if not statuses:
        return "no snapshots yet"
    lines = []
    for s in statuses:
        left = f"{s.seconds_left:,.0f}s left" if s.seconds_left is not None else ""
        lines.append(
            f"{s.signal_id:<30} {s.collection:<28} {s.status:<8} {bar(*_progress(s))} "
            f"{s.rows:>10,} rows {s.chunks:>6,} chunks {s.rate:>10,.0f} rows/s {left}"
            + (f"  ({s.reason})" if s.reason else "")
        )
    return "\n".join(lines)
