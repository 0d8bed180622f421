"""Comparing per-range counts and hashes of the two sides, and the report people and scripts read (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cdc_backfill.verify.ranges import KeyRange

LABEL_WIDTH = 28


@dataclass(frozen=True)
class RangeStats:
    rows: int = 0
    hash: int = 0  # the exact sum of the rows' 60-bit hashes: order-independent


@dataclass(frozen=True)
class RangeResult:
    range: KeyRange
    source: RangeStats
    state: RangeStats

    @property
    def equal(self) -> bool:
        return self.source == self.state

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.range.to_dict(),
            "source_rows": self.source.rows,
            "state_rows": self.state.rows,
            # as strings: the sums pass 2**53 and JSON readers would round them
            "source_hash": str(self.source.hash),
            "state_hash": str(self.state.hash),
            "equal": self.equal,
        }


@dataclass(frozen=True)
class Report:
    collection: str
    key: tuple[str, ...]
    results: tuple[RangeResult, ...]
    extra: dict[str, Any] = field(default_factory=dict)  # where the two sides were read from, the repair
    # ranges that kept changing while verified (not at one position: ``verify.recheck``): not equal, and
    # not known to differ either
    changing: tuple[int, ...] = ()

    @property
    def differing(self) -> list[int]:
        return [r.range.index for r in self.results if not r.equal and r.range.index not in self.changing]

    @property
    def all_equal(self) -> bool:
        return not self.differing and not self.changing

    def summary(self) -> dict[str, Any]:
        return {
            "ranges": len(self.results),
            "equal": len(self.results) - len(self.differing) - len(self.changing),
            "differing": len(self.differing),
            "changing": len(self.changing),
            "source_rows": sum(r.source.rows for r in self.results),
            "state_rows": sum(r.state.rows for r in self.results),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "key": list(self.key),
            **self.extra,
            "all_equal": self.all_equal,
            "summary": self.summary(),
            "differing": self.differing,
            "changing": list(self.changing),
            "ranges": [r.to_dict() for r in self.results],
        }


def compare(
    collection: str,
    key: Sequence[str],
    ranges: Sequence[KeyRange],
    source: Mapping[int, RangeStats],
    state: Mapping[int, RangeStats],
) -> Report:
    """One result per range; a range absent from a side's stats has no rows there."""
    results = tuple(
        RangeResult(r, source.get(r.index, RangeStats()), state.get(r.index, RangeStats())) for r in ranges
    )
    return Report(collection, tuple(key), results)


def _label(text: str) -> str:
    return text if len(text) <= LABEL_WIDTH else text[: LABEL_WIDTH - 3] + "..."


def render(report: Report) -> str:
    """The table of ranges and a summary line."""
    head = ("range", "after", "up to", "source rows", "state rows", "equal")
    rows = [head]
    for res in report.results:
        r = res.range
        rows.append(
            (
                str(r.index),
                _label(r.lo.label()) if r.lo else "(start)",
                _label(r.hi.label()) if r.hi else "(end)",
                f"{res.source.rows:,}",
                f"{res.state.rows:,}",
                "yes" if res.equal else ("changing" if r.index in report.changing else "NO"),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    right = {0, 3, 4}  # numbers line up on the right
    lines = [
        "  ".join(
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row)
        )
        for row in rows
    ]
    s = report.summary()
    verdict = "; ".join(_verdicts(report)) or "every range equal"
    lines.append("")
    lines.append(
        f"{report.collection} (key {', '.join(report.key)}): {s['source_rows']:,} rows in the source, "
        f"{s['state_rows']:,} in the state{_when(report)}; {verdict}"
    )
    return "\n".join(line.rstrip() for line in lines)


def _when(report: Report) -> str:
    """As of when the two sides were read: one position (exact), or the source now (not exact)."""
    if report.extra.get("position"):
        return f", both as of position {report.extra['position']}"
    if report.extra.get("not_at_position"):
        state = report.extra.get("state_as_of", "its last reconcile")
        return f" (not at one position: the source read now, the state as of {state})"
    return ""


def _verdicts(report: Report) -> list[str]:
    s = report.summary()
    out = []
    if report.differing:
        out.append(
            f"{s['differing']} of {s['ranges']} ranges differ: {', '.join(map(str, report.differing))}"
        )
        if report.extra.get("not_caught_up"):
            out[-1] += " (the landing could not be brought up to now: they may only be behind)"
    if report.changing:
        out.append(
            f"{s['changing']} of {s['ranges']} kept changing while verified: "
            f"{', '.join(map(str, report.changing))} (not known to differ: verify again when writes pause)"
        )
    return out
