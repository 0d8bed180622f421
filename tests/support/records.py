"""Debezium PostgreSQL records as the parsers' tests write them: this project's JSON capture's (a key and
value pair, ``commit_lsn`` and ``lsn``), a Kafka sink's (``partition`` and ``offset``, no commit LSN),
and a record changed at one place."""

from __future__ import annotations

import copy
import random
from typing import Any


def capture_record(
    op: str, key: int, lsn: int, commit: int, txid: int | None = 7, **source: Any
) -> dict[str, Any]:
    """A row change as the JSON capture lands it (``txid`` None: no ``txId``)."""
    row = {"id": key, "name": f"n{key}", "balance": "1.10", "active": True, "score": 0.5}
    src = {"version": "x", "connector": "postgresql", "name": "n", "ts_ms": 1700 + key, "snapshot": "false",
           "db": "app", "schema": "public", "table": "t", "txId": txid, "commit_lsn": commit, "lsn": lsn,
           **source}  # fmt: skip
    if txid is None:
        del src["txId"]
    return {
        "key": {"id": key},
        "value": {
            "before": {"id": key} if op in "ud" else None,
            "after": None if op == "d" else row,
            "source": src,
            "op": op,
            "ts_ms": 1701,
        },
    }


def sink_record(op: str, key: int, offset: int, lsn: int | None, **outer: Any) -> dict[str, Any]:
    """A row change as a Kafka sink lands it: offsets, no commit LSN (``lsn`` None: none at all)."""
    record = capture_record(op, key, lsn or 0, 0)
    source = record["value"]["source"]
    del source["commit_lsn"]
    source["lsn"] = lsn
    source["sequence"] = f'["{lsn}","{lsn}"]'
    return {"partition": 0, "offset": offset, **record, **outer}


def changed(record: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A copy of ``record`` with the value at ``path`` replaced (``KeyError``: removed)."""
    out = copy.deepcopy(record)
    at = out
    for part in path[:-1]:
        at = at[part]
    if value is KeyError:
        del at[path[-1]]
    else:
        at[path[-1]] = value
    return out


def capture_changes(n: int, seed: int) -> list[dict[str, Any]]:
    """About ``n`` creates, updates, deletes and key changes of ``public.t`` as the capture lands them,
    each seed in a stretch of the WAL of its own."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k, lsn = rng.randint(1, 50), seed * 100_000 + 10 * i
        if rng.random() < 0.05:  # a key change: the delete and create of one WAL record
            out += [capture_record("d", k, lsn, lsn + 5), capture_record("c", k + 100, lsn, lsn + 5)]
            continue
        record = capture_record(rng.choice("cud"), k, lsn, lsn + 5)
        if record["value"]["after"]:
            record["value"]["after"]["balance"] = f"{rng.randint(-9999, 9999)}.{rng.randint(0, 99):02d}"
        out.append(record)
    return out
