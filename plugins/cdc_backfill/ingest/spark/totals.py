"""What an ingest's parse holds, in one small aggregate over it (``collection_totals``) and the pure
readings of that aggregate: each collection's events and counts, the shapes of its events, the keys
only a catalog knows, what the records' schema wrappers describe; and the markers it read
(``marker_records``)."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from cdc_backfill.eventlog import counts
from cdc_backfill.eventlog.schema import OPS
from cdc_backfill.events.dataworks import SCHEMA_CHANGE
from cdc_backfill.events.debezium import MISSING_KEY_PREFIX, missing_key_collection
from cdc_backfill.ingest.arrow_typing import TALLY
from cdc_backfill.ingest.column_sources import Described
from cdc_backfill.ingest.connect_schemas import described_from_json


def collection_totals(parsed: DataFrame) -> DataFrame:
    """Per collection (None for quarantined records and non-row events): events, quarantined records,
    the greatest position, the shapes of its events (``shape`` of the parser's rows), the reasons
    of records quarantined for want of a key (one per collection, in the None row), and what schema
    wrappers describe. One small aggregate: the one read of the whole parse before the writes."""
    row = F.col("quarantine_reason").isNull() & F.col("op").isin(*OPS)
    op, left_out = F.col("op"), F.size("unchanged") > 0
    reason = F.col("quarantine_reason")
    # a log file a worker wrote stands for its events on one row, with their counts (``typed.TALLY``)
    staged = F.col("staged").isNotNull()
    tallied = {name: F.coalesce(F.sum(F.col("tally")[i]), F.lit(0)) for i, name in enumerate(TALLY)}

    def count(events: Column, name: str) -> Column:
        return (F.count_if(events) + tallied[name]).alias(name)

    shaped = F.col("shape").isNotNull()  # a shape first seen among a staged file's events has a row
    return parsed.groupBy(F.when(row | staged | shaped, F.col("collection")).alias("collection")).agg(
        count(row, "events"),
        tallied["events"].alias("staged_events"),
        F.collect_list("staged").alias("staged"),
        F.count_if(reason.isNotNull()).alias("quarantined"),
        F.collect_set(F.when(reason.startswith(MISSING_KEY_PREFIX), reason)).alias("keyless"),
        # what a schema wrapper says of a collection: on its first event in each file (few rows)
        F.collect_list(
            F.when(F.col("described").isNotNull(), F.struct("collection", "file", "described"))
        ).alias("described"),
        F.max("position").alias("last"),
        F.collect_set("shape").alias("shapes"),
        # the manifest's counts (eventlog.counts), which the reconcile plans its run by
        *[count(row & (op == o), o) for o in (*counts.ROW_OPS, "t")],
        count(row & (op == "c") & left_out, counts.LEFT_OUT),
        count(row & op.isin("c", "u", "r") & left_out, counts.UNCHANGED),
    )


def event_shapes(totals: dict[Any, Any]) -> list[tuple[str, list[list[str]], list[str]]]:
    """Per collection: the distinct sets of key names its events carry, and every column name they carry
    (the signal collection's rows included), from the shapes the parser gave out (pure)."""
    out = []
    for collection, r in totals.items():
        if collection is None:
            continue
        shapes = [json.loads(s) for s in r["shapes"] or []]
        key_sets = {tuple(s["key"]) for s in shapes if s["key"] is not None}
        columns = dict.fromkeys(c for s in shapes for c in s["columns"])
        out.append((collection, [list(k) for k in sorted(key_sets)], list(columns)))
    return out


def keyless_collections(totals: dict[Any, Any]) -> list[str]:
    """Collections of records quarantined for want of a key, from ``collection_totals`` (pure)."""
    reasons = totals[None]["keyless"] if None in totals else []
    return sorted({c for r in reasons if (c := missing_key_collection(r)) is not None})


def wrapped_descriptions(totals: dict[Any, Any]) -> dict[str, Described]:
    """What the records' ``{schema, payload}`` wrappers say of each collection, from ``collection_totals``:
    one row per collection and file at most; where files differ (a column added between them), the last
    file in name order (pure)."""
    rows = [d for r in totals.values() for d in r["described"]]
    out: dict[str, Described] = {}
    for r in sorted(rows, key=lambda r: r["file"]):
        out[r["collection"]] = described_from_json(r["described"])
    return out


def marker_records(parsed: DataFrame) -> tuple[int, list[dict[str, Any]]]:
    """(how many markers the run read, the schema changes among them in their input's order). A marker
    lands no row (a heartbeat, a transaction marker, a schema change: its rows carry its columns); a
    schema change is kept with its text for the run's summary and manifest."""
    rows = parsed.where(F.col("op") == "h").select("file", "line", "record").collect()
    kept = [
        json.loads(r["record"]) for r in sorted(rows, key=lambda r: (r["file"], r["line"])) if r["record"]
    ]
    return len(rows), [k for k in kept if SCHEMA_CHANGE in k]
