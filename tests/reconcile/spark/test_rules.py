"""Spark reconcile vs the reference rules vs the truth, on simulated histories: a source table changed
by random writers while a snapshot reads it chunk by chunk between watermarks, TOAST-only updates and
truncates included. Both reconciles must give the source's final table."""

from __future__ import annotations

import json
import random

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cdc_backfill.events.positions import position_key, position_of_key
from cdc_backfill.landing.spark.rows import as_log_rows, as_signal_rows
from cdc_backfill.pgtypes import PgColumn
from cdc_backfill.reconcile.spark.merge import reconcile_parts, signal_rows, truncates, typed_stream
from cdc_backfill.reconcile.spark.winners import INSIDE, READS_APPLIED, kept_keys
from cdc_backfill.reconcile.windows import find_windows
from cdc_backfill.spark.positions import POSITION_TYPE
from tests.support.reference import Change, ReadRow, reconcile

pytestmark = pytest.mark.spark

COLL, SIG = "s.t", "s.sig"
COLUMNS = [PgColumn("id", "integer", 23, False), PgColumn("v", "text", 25), PgColumn("big", "text", 25)]
EVENT_SCHEMA = T.StructType(
    [
        T.StructField("collection", T.StringType()),
        T.StructField("op", T.StringType()),
        T.StructField("key", T.StringType()),
        T.StructField("after", T.StringType()),
        T.StructField("unchanged", T.ArrayType(T.StringType())),
        T.StructField("position", POSITION_TYPE),
        T.StructField("file", T.StringType()),
        T.StructField("line", T.LongType()),
    ]
)


def simulate(
    seed: int, toast: bool = True, truncate: bool = True
) -> tuple[list[dict], list[dict], dict[int, dict]]:
    """(canonical events, READ rows, the source's final table) of one random history; ``toast``: some
    updates leave ``big`` unchanged (not sent), else every update sends every column; ``truncate``: the
    writers may truncate the table."""
    rng = random.Random(seed)
    source: dict[int, dict] = {k: {"id": k, "v": f"v{k}", "big": f"B{k}"} for k in range(1, 9)}
    events: list[dict] = []
    reads: list[dict] = []
    pos = [0]

    def emit(collection: str, op: str, key: dict | None, after: dict | None, unchanged: tuple = ()) -> None:
        pos[0] += 1
        events.append({"collection": collection, "op": op, "key": json.dumps(key) if key else None,
                       "after": json.dumps(after) if after is not None else None, "unchanged": list(unchanged),
                       "position": bytearray(position_key((pos[0], 0))), "file": "f", "line": pos[0]})  # fmt: skip

    def write() -> None:
        r = rng.random()
        k = rng.randint(1, 12)
        if r < 0.25 and k not in source:
            source[k] = {"id": k, "v": f"i{pos[0]}", "big": f"B{pos[0]}"}
            emit(COLL, "c", {"id": k}, source[k])
        elif r < 0.5 and k in source and toast:
            source[k]["v"] = f"u{pos[0]}"  # big unchanged: TOAST, not sent
            emit(COLL, "u", {"id": k}, {"id": k, "v": source[k]["v"]}, ("big",))
        elif r < 0.5 and k in source:
            source[k]["v"] = f"u{pos[0]}"
            emit(COLL, "u", {"id": k}, source[k])
        elif r < 0.65 and k in source:
            source[k] = {"id": k, "v": f"f{pos[0]}", "big": f"F{pos[0]}"}
            emit(COLL, "u", {"id": k}, source[k])
        elif r < 0.85 and k in source:
            del source[k]
            emit(COLL, "d", {"id": k}, None)
        elif r < 0.88 and truncate:
            source.clear()
            emit(COLL, "t", None, None)

    max_key = max(source)
    for lo in range(0, max_key, 3):
        for _ in range(rng.randint(0, 2)):
            write()
        chunk = f"c{lo}"
        emit(SIG, "c", {"id": f"{chunk}-open"}, {"id": f"{chunk}-open"})
        for _ in range(rng.randint(0, 3)):
            write()
        reads += [
            {**dict(row), "_cdc_chunk_id": chunk}
            for k, row in sorted(source.items())
            if lo < k <= min(lo + 3, max_key)
        ]
        for _ in range(rng.randint(0, 3)):
            write()
        emit(SIG, "c", {"id": f"{chunk}-close"}, {"id": f"{chunk}-close"})
    for _ in range(rng.randint(0, 4)):
        write()
    return events, reads, source


def reference_state(events: list[dict], reads: list[dict]) -> dict:
    changes = []
    for e in events:
        key = tuple(json.loads(e["key"]).values()) if e["key"] else None
        after = json.loads(e["after"]) if e["after"] else None
        window = key[0] if e["collection"] == SIG else None
        changes.append(Change(e["collection"], e["op"], key, after, position_of_key(bytes(e["position"])),
                              tuple(e["unchanged"]), window_id=window))  # fmt: skip
    rows = [
        ReadRow(COLL, r["_cdc_chunk_id"], (r["id"],), {k: r[k] for k in ("id", "v", "big")}) for r in reads
    ]
    return reconcile(changes, rows, signal_table=SIG).state.get(COLL, {})


def spark_keys(spark, events: list[dict], reads: list[dict], plan: str) -> DataFrame:  # type: ignore[no-untyped-def]
    """The Spark reconcile's merged keys (the state and the keys it lost), planned as ``plan`` says:
    "default" (nothing counted: every key with a buffer per column), "counted" (as a run plans it from
    its counts: the rows that left a column out counted, no truncate looked for where the history has
    none), "by winner" (every key takes its winner whole: only right where no row left a column out),
    "judged in the merge" (the READ rows judged in the merge's pass: no key has two READ rows, no
    truncate, no row left a column out)."""
    ev_df = spark.createDataFrame(events, EVENT_SCHEMA)
    read_schema = "id int, v string, big string, _cdc_chunk_id string"
    reads_df = spark.createDataFrame(reads, read_schema) if reads else None
    rows, signals = as_log_rows(ev_df, COLL, COLUMNS, ["id"]), as_signal_rows(ev_df, SIG)
    own = [e for e in events if e["collection"] == COLL]
    counted = sum(1 for e in own if e["op"] in ("c", "u", "r") and e["unchanged"])
    left_out = {"default": None, "counted": counted, "by winner": 0, "judged in the merge": 0}[plan]
    no_truncate = plan in ("counted", "judged in the merge") and not any(e["op"] == "t" for e in own)
    stream = typed_stream(rows, COLUMNS, ["id"])
    found = find_windows(signal_rows(signals))
    truncs = None if no_truncate else truncates(rows)
    return reconcile_parts(
        stream, truncs, reads_df, found, COLUMNS, ["id"], left_out=left_out,
        reads_once=plan == "judged in the merge",
    ).keys  # fmt: skip


def spark_state(spark, events: list[dict], reads: list[dict], plan: str) -> dict:  # type: ignore[no-untyped-def]
    state = kept_keys(spark_keys(spark, events, reads, plan))
    return {(r["id"],): {"id": r["id"], "v": r["v"], "big": r["big"]} for r in state.collect()}


@pytest.mark.parametrize("plan", ["default", "counted"])
@pytest.mark.parametrize("seed", range(12))
def test_spark_and_reference_give_the_source(spark, seed: int, plan: str) -> None:  # type: ignore[no-untyped-def]
    events, reads, source = simulate(seed)
    truth = {(k,): row for k, row in source.items()}
    assert reference_state(events, reads) == truth
    assert spark_state(spark, events, reads, plan) == truth


@pytest.mark.parametrize("plan", ["by winner", "counted"])
@pytest.mark.parametrize("seed", range(6))
def test_histories_that_send_every_column_take_each_winner_whole(spark, seed: int, plan: str) -> None:  # type: ignore[no-untyped-def]
    events, reads, source = simulate(seed, toast=False)
    truth = {(k,): row for k, row in source.items()}
    assert reference_state(events, reads) == truth
    assert spark_state(spark, events, reads, plan) == truth


@pytest.mark.parametrize("seed", range(8))
def test_reads_judged_in_the_merge_give_the_source_and_the_same_counts(spark, seed: int, capsys) -> None:  # type: ignore[no-untyped-def]
    events, reads, source = simulate(seed, toast=False, truncate=False)
    truth = {(k,): row for k, row in source.items()}
    assert reference_state(events, reads) == truth
    assert spark_state(spark, events, reads, "judged in the merge") == truth
    fused, apart = (spark_keys(spark, events, reads, p) for p in ("judged in the merge", "counted"))
    fused.explain()
    assert INSIDE in capsys.readouterr().out  # the plan asked for is the one that ran

    def applied(keys: DataFrame) -> int:
        return keys.agg(F.sum(READS_APPLIED)).first()[0]

    assert applied(fused) == applied(apart)
