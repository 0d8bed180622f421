"""Judging a snapshot the way it fails in production: the captured stream plus the landed READ chunks,
reconciled by the reference rules (docs/design.md §6), must equal the source table, row for row."""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from cdc_backfill.events import parse_file
from cdc_backfill.events.positions import position_of_key
from cdc_backfill.lakepath import read_parquet
from cdc_backfill.landing.event_log import log_files
from cdc_backfill.names import collection_name, split_collection
from cdc_backfill.pg.catalog import primary_key, table_columns
from cdc_backfill.pgtypes import PgColumn
from tests.support.reference import Change, ReadRow, Result, find_windows, reconcile
from tests.support.state import state_table
from tests.support.typed import from_arrow, from_debezium, from_text

SIGNAL = "public.cdc_signal"


def columns_of(url: str, collection: str) -> tuple[list[PgColumn], list[str]]:
    schema, table = split_collection(collection)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        cols = list(table_columns(conn, schema, table))
        pk = list(primary_key(conn, schema, table))
    engine.dispose()
    return cols, pk


def keyed_state(rows: Iterable[Any], key: list[str]) -> dict[tuple, dict]:
    """Rows of a Spark state (``collect()``) by key, without the bookkeeping columns."""
    out = {}
    for r in rows:
        row = r.asDict()
        row.pop("_cdc_position")
        row.pop("_cdc_unknown")
        out[tuple(row[k] for k in key)] = row
    return out


def source_state(url: str, collection: str, key: list[str]) -> dict[tuple, dict]:
    """The table as it is now, every value read as the server's text and typed like the others."""
    cols, _ = columns_of(url, collection)
    schema, table = split_collection(collection)
    select = ", ".join(f'"{c.name}"::text' for c in cols)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(f'SELECT {select} FROM "{schema}"."{table}"').all()
    engine.dispose()
    out = {}
    for r in rows:
        row = {c.name: from_text(c, v) for c, v in zip(cols, r, strict=True)}
        out[tuple(row[k] for k in key)] = row
    return out


def assert_state_is_source(url: str, state: Path, collections: Iterable[str]) -> None:
    """Every row of each collection's current state (read by DuckDB, over the version's files as Arrow
    reads them: locally or on S3) equals the source's."""
    import duckdb

    for coll in collections:
        columns, key = columns_of(url, coll)
        names = [c.name for c in columns]
        version = state_table(state, coll)  # noqa: F841  (DuckDB finds it by its name)
        got = duckdb.sql(f"SELECT {', '.join(names)} FROM version").fetchall()
        got_rows = {tuple(r[names.index(k)] for k in key): dict(zip(names, r, strict=True)) for r in got}
        want = source_state(url, coll, key)
        if got_rows != want:
            missing, extra = want.keys() - got_rows.keys(), got_rows.keys() - want.keys()
            wrong = sorted((k for k in want.keys() & got_rows.keys() if want[k] != got_rows[k]), key=str)
            example = (
                f"; e.g. {wrong[0]}: state {got_rows[wrong[0]]} != source {want[wrong[0]]}" if wrong else ""
            )
            raise AssertionError(
                f"{coll}: {len(missing)} missing (e.g. {sorted(missing, key=str)[:3]}), {len(extra)} extra "
                f"(e.g. {sorted(extra, key=str)[:3]}), {len(wrong)} differ{example}"
            )


def stream_changes(
    landing: Path, types: dict[str, dict[str, PgColumn]], keys: dict[str, list[str]]
) -> list[Change]:
    changes = []
    for f in sorted((landing / "stream").glob("cdc-*.jsonl")):
        result = parse_file(str(f))
        assert result.quarantined == []
        for e in result.events:
            if e.collection == SIGNAL:
                key = (e.key["id"],) if e.key else None
                changes.append(
                    Change(e.collection, e.op, key, e.after, tuple(e.position), window_id=key and key[0])
                )
                continue
            if e.collection not in types:
                continue
            cols = types[e.collection]
            key = (
                None if e.key is None else tuple(from_debezium(cols[k], e.key[k]) for k in keys[e.collection])
            )
            after = None if e.after is None else {k: from_debezium(cols[k], v) for k, v in e.after.items()}
            changes.append(Change(e.collection, e.op, key, after, tuple(e.position), tuple(e.unchanged)))
    return changes


def log_changes(
    landing: Path, types: dict[str, dict[str, PgColumn]], keys: dict[str, list[str]]
) -> list[Change]:
    """The typed log's events of the collections and of the signal collection, as the reference reads them."""
    changes = []
    for coll in [SIGNAL, *types]:
        for f in log_files(landing, coll):
            for r in read_parquet(f).to_pylist():
                position = position_of_key(r["_cdc_position"])
                op = r["_cdc_op"]
                row = {k: v for k, v in r.items() if not k.startswith("_cdc_")}
                if coll == SIGNAL:
                    changes.append(Change(coll, op, (row["id"],), row, position, window_id=row["id"]))
                elif op == "t":
                    changes.append(Change(coll, op, None, None, position))
                else:
                    row = {k: from_arrow(types[coll][k], v) for k, v in row.items()}
                    after = None if op == "d" else row
                    unchanged = tuple(r["_cdc_unchanged"] or ())
                    changes.append(
                        Change(coll, op, tuple(row[k] for k in keys[coll]), after, position, unchanged)
                    )
    return changes


def read_rows(landing: Path, collection: str, types: dict[str, PgColumn], key: list[str]) -> list[ReadRow]:
    rows = []
    for f in sorted((landing / "snapshots" / collection).glob("*.parquet")):
        table = read_parquet(f)
        meta = table.schema.metadata
        assert json.loads(meta[b"cdc.key"]) == key
        for r in table.to_pylist():
            row = {k: from_arrow(types[k], v) for k, v in r.items() if not k.startswith("_cdc_")}
            rows.append(ReadRow(collection, r["_cdc_chunk_id"], tuple(row[k] for k in key), row))
    return rows


def _types_and_keys(
    url: str, collections: Iterable[str]
) -> tuple[dict[str, dict[str, PgColumn]], dict[str, list[str]]]:
    types, keys = {}, {}
    for coll in collections:
        cols, pk = columns_of(url, coll)
        types[coll] = {c.name: c for c in cols}
        keys[coll] = pk
    return types, keys


def landed_changes(url: str, landing: Path, collections: Iterable[str]) -> list[Change]:
    """The landed stream's changes of the collections and of the signal collection (either landing)."""
    types, keys = _types_and_keys(url, collections)
    return stream_changes(landing, types, keys) + log_changes(landing, types, keys)


@dataclass(frozen=True)
class Overlap:
    """What the writers did during a snapshot, read from the landed stream, not from the clock."""

    windows: int  # windows closed in the stream
    windows_with_changes: int  # of those, the windows with a change of the collections strictly inside
    changes_in_span: int  # changes between the first window's low watermark and the last one's high


def overlap(url: str, landing: Path, collections: Iterable[str]) -> Overlap:
    """How the changes of ``collections`` in the landed stream overlapped the snapshots' windows."""
    changes = landed_changes(url, landing, collections)
    windows = [w for w in find_windows(changes).values() if w.high is not None]
    writes = sorted(c.position for c in changes if c.collection != SIGNAL and c.op in ("c", "u", "d", "t"))

    def between(low: tuple, high: tuple) -> int:  # strictly inside
        return bisect.bisect_left(writes, high) - bisect.bisect_right(writes, low)

    if not windows:
        return Overlap(0, 0, 0)
    span = between(min(w.low for w in windows), max(w.high for w in windows))  # type: ignore[type-var]
    inside = sum(1 for w in windows if between(w.low, w.high) > 0)  # type: ignore[arg-type]
    return Overlap(len(windows), inside, span)


def judge(url: str, landing: Path, collections: list[str]) -> tuple[Result, dict[str, dict[tuple, dict]]]:
    """(reconcile result, the source's state) for the collections."""
    types, keys = _types_and_keys(url, collections)
    changes = stream_changes(landing, types, keys) + log_changes(landing, types, keys)  # either landing
    reads = [r for coll in collections for r in read_rows(landing, coll, types[coll], keys[coll])]
    result = reconcile(changes, reads, signal_table=SIGNAL)
    source = {coll: source_state(url, coll, keys[coll]) for coll in collections}
    return result, source


def assert_consistent(url: str, landing: Path, collections: list[str]) -> Result:
    result, source = judge(url, landing, collections)
    assert result.reads_waiting == [], "every window must be closed in the drained stream"
    for coll in collections:
        got = result.state.get(coll, {})
        missing = source[coll].keys() - got.keys()
        extra = got.keys() - source[coll].keys()
        wrong = [k for k in source[coll].keys() & got.keys() if source[coll][k] != got[k]]
        assert not (missing or extra or wrong), (
            f"{coll}: {len(missing)} missing {sorted(missing)[:5]}, {len(extra)} extra {sorted(extra)[:5]}, "
            f"{len(wrong)} differ {[(source[coll][k], got[k]) for k in wrong[:2]]}"
        )
    return result


__all__ = ["assert_consistent", "collection_name", "judge", "overlap", "source_state"]
