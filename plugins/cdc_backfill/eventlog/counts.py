"""What a roll manifest counts of each collection's events (pure): the writers record it as they land
a roll, so that a reconcile plans its run from the manifests instead of a Spark job over every new
event (``reconcile.runs.LandedLog.totals``).

A manifest's ``counts`` maps each collection it lands to its events by op (``c``, ``u``, ``d``, ``r``,
``t``), its creates that left columns unchanged (``left_out``: key changes of a row with an unchanged
TOAST value) and its row events that did (``unchanged``). A manifest written before counts existed
has none; the reconcile then counts with Spark, as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

COUNTS = "counts"  # the manifest's key
ROW_OPS = "cudr"  # the ops a run applies; ``t`` (truncate) is counted beside them
LEFT_OUT = "left_out"
UNCHANGED = "unchanged"
KEYS = (*ROW_OPS, "t", LEFT_OUT, UNCHANGED)


def event_counts(ops: bytes, unchanged: Sequence[Sequence[str] | None]) -> dict[str, int]:
    """The counts of one collection's events: ``ops`` one byte each, ``unchanged`` the columns each
    event left unchanged (None or empty: none)."""
    left = bytes(ops[i] for i, names in enumerate(unchanged) if names)
    return op_counts(
        {op: ops.count(op.encode()) for op in (*ROW_OPS, "t")}, {op: left.count(op.encode()) for op in "cur"}
    )


def op_counts(by_op: Mapping[str, int], left_by_op: Mapping[str, int]) -> dict[str, int]:
    """The counts from how many events each op has (``by_op``) and how many of each op left columns
    unchanged (``left_by_op``; a delete's or a truncate's list says nothing): one rule for every
    writer that counts its events."""
    counts = {op: by_op.get(op, 0) for op in (*ROW_OPS, "t")}
    counts[LEFT_OUT] = left_by_op.get("c", 0)
    counts[UNCHANGED] = sum(left_by_op.get(op, 0) for op in ("c", "u", "r"))
    return counts


def valid_counts(doc: object) -> dict[str, dict[str, int]] | None:
    """A manifest's ``counts`` as written, or None where it is missing or not of this shape (a
    manifest that does not say is counted by Spark)."""
    if not isinstance(doc, Mapping):
        return None
    out = {}
    for collection, counts in doc.items():
        if not isinstance(counts, Mapping) or any(not isinstance(counts.get(k), int) for k in KEYS):
            return None
        out[str(collection)] = {k: int(counts[k]) for k in KEYS}
    return out
