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

    @property
    def differing(self) -> list[int]:
        return [r.range.index for r in self.results if not r.equal]

    @property
    def all_equal(self) -> bool:
        return not self.differing

    def summary(self) -> dict[str, Any]:
        return {
            "ranges": len(self.results),
            "equal": len(self.results) - len(self.differing),
            "differing": len(self.differing),
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
                "yes" if res.equal else "NO",
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
    verdict = (
        "every range equal"
        if report.all_equal
        else f"{s['differing']} of {s['ranges']} ranges differ: {', '.join(map(str, report.differing))}"
    )
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
        return " (the source read now, the state as of its last reconcile)"
    return ""
