"""Reference reconcile: a small, obviously-correct, in-memory reading of docs/design.md §6.

Tests hold the snapshot engine and the Spark job to this module, so it favours plainness over speed:
every rule is one small function and nothing is clever. It is representation-agnostic: keys are
hashable tuples of already-normalised values, rows are dicts, positions are tuples of ints, and the
caller has already turned each stream record into a :class:`Change` (TOAST placeholders listed in
``unchanged``, the signal row id in ``window_id``).

Incremental runs (§6.6). The stream is split in position order: run N+1 gets only events after run N,
``previous=`` run N's ``state`` and ``open_windows=`` run N's ``open_windows``. A window opened in one
run and closed in a later one is carried as a :class:`Window` whose ``touched`` remembers which keys
the stream changed after its low watermark: the later run no longer sees those events, yet must still
drop READ rows for those keys. A READ chunk must be handed to a run that sees its window close (it
waits in a run where the window is still open). A run that does not know the window at all (never
opened, or closed in an earlier run) leaves the chunk waiting: applying it there would need the
position of every key of the previous state, which ``state`` does not keep.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cdc_backfill.events.model import OPS, ROW_OPS
from cdc_backfill.signals.model import CLOSE_SUFFIX, OPEN_SUFFIX

Key = tuple[Any, ...]
Row = dict[str, Any]
Position = tuple[int, ...]
State = dict[str, dict[Key, Row]]
# (collection, key) that a stream event changed; key None stands for a truncate of the collection.
Touch = tuple[str | None, Key | None]


# Sort rank at equal position: a READ row sorts after every stream event at its window's high.
_STREAM, _READ = 0, 1


@dataclass(frozen=True)
class Change:
    """One stream event, already normalised by the caller."""

    collection: str | None
    op: str  # c u d r t m h; r = a READ Debezium produced inside the stream: an ordinary event
    key: Key | None  # None for t/m/h
    after: Row | None  # None removes the key (delete, or DataWorks update before-half)
    position: Position
    unchanged: tuple[str, ...] = ()  # columns whose previous value must be kept (unchanged TOAST)
    window_id: str | None = None  # on events of the signal table: the signal row id


@dataclass(frozen=True)
class ReadRow:
    """One row landed by a snapshot chunk."""

    collection: str
    chunk_id: str
    key: Key
    row: Row


@dataclass(frozen=True)
class Window:
    """A chunk's watermarks in the stream.

    ``touched`` is only filled on windows carried between incremental runs (``Result.open_windows``):
    the keys the stream changed after ``low`` in earlier runs, which a later run can no longer see.
    """

    chunk_id: str
    low: Position
    high: Position | None  # None: not closed in the stream yet
    touched: frozenset[Touch] = frozenset()


@dataclass
class Result:
    state: State  # collection -> key -> row; a collection without live keys is absent
    position: dict[str, Position]  # collection -> greatest position applied (stream events, window highs)
    reads_dropped: int
    reads_applied: int
    reads_waiting: list[str]  # chunk ids whose window has not closed (sorted): their rows wait
    deleted_keys: int  # keys this run changed that end absent (delete, update before-half, truncate)
    open_windows: dict[str, Window] = field(default_factory=dict)  # pass to the next run


@dataclass(frozen=True)
class _Step:
    """One thing that happens to a key: a row image, a removal, or a truncate of its collection."""

    order: tuple[Position, int, int]  # (position, rank, input index): total and deterministic
    after: Row | None
    unchanged: tuple[str, ...] = ()
    truncate: bool = False

    @property
    def position(self) -> Position:
        return self.order[0]


# --- windows -----------------------------------------------------------------------------------------


def find_windows(changes: Iterable[Change]) -> dict[str, Window]:
    """Windows (chunk_id -> low, high) marked by the signal-table changes of ``changes``.

    An insert of ``<chunk>-open`` opens; an insert of ``<chunk>-close`` closes (insert/insert
    watermarking), and so does a delete of ``<chunk>-open`` (Debezium's insert/delete strategy).
    """
    return _find_windows(changes, {})


def _find_windows(changes: Iterable[Change], carried: Mapping[str, Window]) -> dict[str, Window]:
    opens: dict[str, Position] = {}
    closes: dict[str, list[Position]] = defaultdict(list)
    for chunk, window in carried.items():
        if window.high is not None:
            raise ValueError(f"open_windows carries closed window {chunk!r}: only unclosed ones carry over")
        opens[chunk] = window.low
    for change in changes:
        edge = _window_edge(change)
        if edge is None:
            continue
        chunk, is_open = edge
        if is_open:
            # A duplicate landing of the open keeps the first position: the smallest, so that the
            # answer does not depend on the order the input arrives in.
            opens[chunk] = min(opens.get(chunk, change.position), change.position)
        else:
            closes[chunk].append(change.position)
    windows = {}
    for chunk, low in opens.items():
        touched = carried[chunk].touched if chunk in carried else frozenset()
        windows[chunk] = Window(chunk, low, _first_after(low, closes.get(chunk, [])), touched)
    return windows  # a close whose open was never seen has no entry: it is ignored


def _window_edge(change: Change) -> tuple[str, bool] | None:
    """(chunk_id, True for open / False for close) if the change marks a window edge, else None."""
    wid = change.window_id
    if wid is None:
        return None
    inserted = change.op in ("c", "r")
    if wid.endswith(OPEN_SUFFIX):
        chunk = wid.removesuffix(OPEN_SUFFIX)
        if inserted:
            return chunk, True
        if change.op == "d":  # insert/delete strategy: deleting the open row closes the window
            return chunk, False
    elif wid.endswith(CLOSE_SUFFIX) and inserted:
        return wid.removesuffix(CLOSE_SUFFIX), False
    return None


def _first_after(low: Position, closes: list[Position]) -> Position | None:
    # A close at or before the open cannot belong to this window (a stale or foreign row): ignore it.
    later = [p for p in closes if p > low]
    return min(later) if later else None


# --- the stream --------------------------------------------------------------------------------------


def _check(change: Change) -> None:
    if change.op not in OPS:
        raise ValueError(f"unknown op {change.op!r} at {change.position}")
    if change.op in ROW_OPS and change.key is None:
        raise ValueError(f"row event {change.op!r} without a key at {change.position}")
    if (change.op in ROW_OPS or change.op == "t") and change.collection is None:
        raise ValueError(f"{change.op!r} event without a collection at {change.position}")


def _in_state(change: Change, signal_table: str | None) -> bool:
    """Row events and truncates reach the state; m/h do not, nor the signal table when named."""
    if change.op not in ROW_OPS and change.op != "t":
        return False
    return signal_table is None or change.collection != signal_table


def _touch(change: Change) -> Touch:
    return (change.collection, None if change.op == "t" else change.key)


class _StreamIndex:
    """Sorted positions of the stream events per (collection, key), truncates under key None."""

    def __init__(self, stream: Iterable[Change]) -> None:
        positions: dict[Touch, list[Position]] = defaultdict(list)
        for change in stream:
            positions[_touch(change)].append(change.position)
        self._positions = {touch: sorted(ps) for touch, ps in positions.items()}

    def between(self, touch: Touch, low: Position, high: Position) -> bool:
        """True if an event for ``touch`` lies strictly between ``low`` and ``high``."""
        positions = self._positions.get(touch, [])
        i = bisect.bisect_right(positions, low)
        return i < len(positions) and positions[i] < high

    def after(self, low: Position) -> frozenset[Touch]:
        return frozenset(touch for touch, ps in self._positions.items() if ps[-1] > low)


# --- READ rows ---------------------------------------------------------------------------------------


def _is_dropped(read: ReadRow, window: Window, index: _StreamIndex) -> bool:
    """§6.2: any stream event for the key strictly inside the window drops the READ row.

    A truncate of the collection inside the window counts as an event for every key: the chunk may
    have been read before it, and would bring deleted rows back.
    """
    assert window.high is not None
    for touch in ((read.collection, read.key), (read.collection, None)):
        if touch in window.touched or index.between(touch, window.low, window.high):
            return True
    return False


@dataclass
class _Reads:
    applied: list[tuple[ReadRow, Position]] = field(default_factory=list)  # with the window's high
    dropped: int = 0
    waiting: set[str] = field(default_factory=set)
    consumed_highs: dict[str, Position] = field(default_factory=dict)  # collection -> greatest high
    # (collection, key) -> [(low, high, row)] of READ rows dropped for that key: see _apply
    fallbacks: dict[Touch, list[tuple[Position, Position, Row]]] = field(default_factory=dict)


def _sort_reads(reads: Iterable[ReadRow], windows: Mapping[str, Window], index: _StreamIndex) -> _Reads:
    out = _Reads()
    for read in reads:
        window = windows.get(read.chunk_id)
        if window is None or window.high is None:
            out.waiting.add(read.chunk_id)  # §6.1: waits for a later run, not dropped
            continue
        high = window.high
        out.consumed_highs[read.collection] = max(out.consumed_highs.get(read.collection, high), high)
        if _is_dropped(read, window, index):
            out.dropped += 1
            out.fallbacks.setdefault((read.collection, read.key), []).append((window.low, high, read.row))
        else:
            out.applied.append((read, high))
    return out


# --- replay ------------------------------------------------------------------------------------------


def _apply(
    row: Row | None, after: Row | None, unchanged: tuple[str, ...], fallback: Row | None = None
) -> Row | None:
    """The row after one event. An unchanged (TOAST) column keeps the value the row had just before;
    when the row never had it and the event lies inside the window of a READ of this key that the
    event's own change dropped, that READ row supplies it: a column no event in the window set was
    constant across the window, so the value the READ saw is the one it had."""
    if after is None:
        return None
    new = {column: value for column, value in after.items() if column not in unchanged}
    for column in unchanged:
        if row is not None and column in row:
            new[column] = row[column]
        elif fallback is not None and column in fallback:
            new[column] = fallback[column]
    return new


def _replay(
    row: Row | None,
    steps: list[_Step],
    fallbacks: list[tuple[Position, Position, Row]] | None = None,
    carried: Mapping[tuple[Position, int, int], Row | None] | None = None,
) -> tuple[Row | None, bool]:
    """The key's row after its steps in order, and whether any step changed it. ``carried``: per step
    that creates this key by a key change, the old key's row just before (see _key_changes)."""
    last: Position = ()  # the previous state counts as older than anything in this run
    changed = False
    for step in sorted(steps, key=lambda s: s.order):
        if step.truncate:
            if row is not None and last < step.position:
                row, changed = None, True
            continue
        fallback = (carried or {}).get(step.order) or next(
            (r for low, high, r in fallbacks or () if low < step.position < high), None
        )
        row, last, changed = _apply(row, step.after, step.unchanged, fallback), step.position, True
    return row, changed


def _key_steps(stream: list[tuple[int, Change]], reads: _Reads) -> dict[str, dict[Key, list[_Step]]]:
    steps: dict[str, dict[Key, list[_Step]]] = defaultdict(lambda: defaultdict(list))
    for i, change in stream:
        if change.op != "t":
            step = _Step((change.position, _STREAM, i), change.after, change.unchanged)
            steps[change.collection][change.key].append(step)
    for j, (read, high) in enumerate(reads.applied):
        steps[read.collection][read.key].append(_Step((high, _READ, j), read.row))
    return steps


def _truncates(stream: list[tuple[int, Change]]) -> dict[str | None, list[_Step]]:
    out: dict[str | None, list[_Step]] = defaultdict(list)
    for i, change in stream:
        if change.op == "t":
            out[change.collection].append(_Step((change.position, _STREAM, i), None, truncate=True))
    return out


def _positions(stream: list[tuple[int, Change]], reads: _Reads) -> dict[str, Position]:
    position: dict[str, Position] = dict(reads.consumed_highs)
    for _, change in stream:
        if change.collection is not None:
            position[change.collection] = max(position.get(change.collection, ()), change.position)
    return position


# --- reconcile ---------------------------------------------------------------------------------------


def reconcile(
    changes: Iterable[Change],
    reads: Iterable[ReadRow],
    previous: Mapping[str, Mapping[Key, Row]] | None = None,
    *,
    signal_table: str | None = None,
    open_windows: Mapping[str, Window] | None = None,
) -> Result:
    """docs/design.md §6 over one run: ``previous`` state + ``changes`` + landed ``reads`` -> new state.

    ``signal_table``: the signal table's collection, kept out of the state (None keeps every
    collection). ``open_windows``: the previous run's ``Result.open_windows`` (see the module doc).
    """
    changes = list(changes)
    for change in changes:
        _check(change)
    windows = _find_windows(changes, open_windows or {})
    stream = [(i, c) for i, c in enumerate(changes) if _in_state(c, signal_table)]
    index = _StreamIndex(c for _, c in stream)
    sorted_reads = _sort_reads(reads, windows, index)
    state, deleted = _build_state(
        previous or {}, _key_steps(stream, sorted_reads), _truncates(stream), sorted_reads.fallbacks
    )
    return Result(
        state=state,
        position=_positions(stream, sorted_reads),
        reads_dropped=sorted_reads.dropped,
        reads_applied=len(sorted_reads.applied),
        reads_waiting=sorted(sorted_reads.waiting),
        deleted_keys=deleted,
        open_windows=_still_open(windows, index),
    )


def _build_state(
    previous: Mapping[str, Mapping[Key, Row]],
    steps: Mapping[str, Mapping[Key, list[_Step]]],
    truncates: Mapping[str | None, list[_Step]],
    fallbacks: Mapping[Touch, list[tuple[Position, Position, Row]]] | None = None,
) -> tuple[State, int]:
    state: State = {}
    deleted = 0
    # Insertion order, not set order: the output is the same dict, built the same way, every time.
    for collection in dict.fromkeys([*previous, *steps, *truncates]):
        before = previous.get(collection, {})
        key_steps = steps.get(collection, {})
        cut = truncates.get(collection, [])
        starts: dict[Key, Row | None] = {}
        for key in dict.fromkeys([*before, *key_steps]):
            start = before.get(key)
            for _low, _high, read_row in (fallbacks or {}).get((collection, key), []):
                if start is not None and read_row.keys() - start.keys():
                    # an earlier run applied the unchanged-column event whose window closes only now:
                    # the column it could not fill then comes from the READ dropped now (see _apply)
                    start = {**{c: read_row[c] for c in read_row.keys() - start.keys()}, **start}
            starts[key] = start
        carried = _key_changes(key_steps, cut, starts, (fallbacks or {}), collection)
        rows: dict[Key, Row] = {}
        for key in starts:
            dropped = (fallbacks or {}).get((collection, key), [])
            row, changed = _replay(starts[key], [*key_steps.get(key, []), *cut], dropped, carried(key))
            if row is not None:
                rows[key] = dict(row)  # a copy: the caller's previous state is never aliased
            elif changed:
                deleted += 1
        if rows:
            state[collection] = rows
    return state, deleted


def _key_changes(
    key_steps: Mapping[Key, list[_Step]],
    cut: list[_Step],
    starts: Mapping[Key, Row | None],
    fallbacks: Mapping[Touch, list[tuple[Position, Position, Row]]],
    collection: str | None,
) -> Any:
    """A key change lands as a delete of the old key at (commit, lsn, 0) and a create of the new one at
    (commit, lsn, 1): the create's unchanged columns take the old key's row just before its delete
    (along chains of key changes). Returns key -> {create step's order: that row}."""
    deletes = {s.position: k for k, ss in key_steps.items() for s in ss if s.after is None}

    def row_before(key: Key, order: tuple[Position, int, int]) -> Row | None:
        earlier = [s for s in [*key_steps.get(key, []), *cut] if s.order < order]
        dropped = fallbacks.get((collection, key), [])
        return _replay(starts.get(key), earlier, dropped, carried(key))[0]

    def carried(key: Key) -> dict[tuple[Position, int, int], Row | None]:
        out = {}
        for s in key_steps.get(key, []):
            p = s.position
            if s.unchanged and s.after is not None and len(p) == 3 and p[-1] == 1:
                old = deletes.get((*p[:-1], 0))
                if old is not None:
                    [d] = [x for x in key_steps[old] if x.position == (*p[:-1], 0)]
                    out[s.order] = row_before(old, d.order)
        return out

    return carried


def _still_open(windows: Mapping[str, Window], index: _StreamIndex) -> dict[str, Window]:
    """Unclosed windows, with the keys changed after their low so far, for the next run."""
    return {
        chunk: Window(chunk, w.low, None, w.touched | index.after(w.low))
        for chunk, w in sorted(windows.items())
        if w.high is None
    }
