"""Where the source cannot be read at an exact position (``verify.spark.now``), a range that differs
may only be one the writers changed between the two reads. Each such range is re-checked: the source's
range read (``before``), the landing brought up to now and the state advanced over it (``state``), the
source's range read again (``after``). Then (pure):

- the state equals either read: the range is equal (it was only behind);
- both reads agree and the state does not: the range differs (the source held still around the state's
  position, so the state is wrong), when the landing was brought up to now; without that, it may
  still be behind, and the report says so (``caught_up``);
- the reads disagree: the range kept changing while verified; it is neither equal nor known to differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cdc_backfill.verify.compare import RangeResult, RangeStats, Report

ROUNDS = 3  # re-checks of the ranges that keep changing, before verify says so
MAX_RECHECKS = 10  # what verify --rechecks takes: each brings the landing up to now (a drain)


def pending(report: Report, first: bool) -> list[int]:
    """The ranges a re-check looks at: every one that differs at the first, then those still changing
    (a range found to differ stays so)."""
    return report.differing if first else list(report.changing)


def recheck(
    report: Report,
    todo: Sequence[int],
    before: Mapping[int, RangeStats],
    state: Mapping[int, RangeStats],
    after: Mapping[int, RangeStats],
) -> Report:
    """``report`` with the ranges ``todo`` judged again from one re-check's reads."""
    results, changing = [], []
    for res in report.results:
        i = res.range.index
        if i not in todo:
            results.append(res)
            continue
        b, s, a = before.get(i, RangeStats()), state.get(i, RangeStats()), after.get(i, RangeStats())
        if s in (a, b):
            results.append(RangeResult(res.range, s, s))
            continue
        results.append(RangeResult(res.range, a, s))
        if a != b:
            changing.append(i)
    return Report(report.collection, report.key, tuple(results), dict(report.extra), tuple(changing))
