"""Files of change events to the typed event log, on Spark (``cdc-backfill ingest``).

One run: parse the new files once (the same parser as everywhere, every format), type each collection's
events with its columns, write them as log files in position order, then one roll manifest that names
those files and the input files they came from. The manifest is the commit: before it, nothing of the
run counts; after it, every input file is known as ingested and never lands again. Records that cannot
be read go to ``<landing>/_quarantine/ingest-<run>/`` with their file, line and reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from cdc_backfill.eventlog import counts
from cdc_backfill.eventlog.schema import POSITION, LogSchemaError
from cdc_backfill.events.parse import ParseOptions
from cdc_backfill.events.positions import position_of_key
from cdc_backfill.faults import INGEST_CRASH_ENV, crash_point
from cdc_backfill.ingest.arrow_typing import Typing, readable
from cdc_backfill.ingest.column_sources import ColumnsError, ColumnSources, Described, shape_mismatch
from cdc_backfill.ingest.inputs import ingest_lock, move_ingested_stream, pending, remove_unnamed
from cdc_backfill.ingest.spark.log_files import name_files, staged_files
from cdc_backfill.ingest.spark.parse import QUARANTINE_COLUMNS, parse_landing_files, parse_local_files
from cdc_backfill.ingest.spark.totals import (
    collection_totals,
    event_shapes,
    keyless_collections,
    marker_records,
    wrapped_descriptions,
)
from cdc_backfill.lakepath import S3Path, lake_path, rmtree
from cdc_backfill.landing.event_log import describe, next_version
from cdc_backfill.landing.layout import (
    LOG_DIR,
    log_version_dir,
    quarantine_dir,
    staging_dir,
    typed_stage_dir,
)
from cdc_backfill.landing.manifests import SCHEMA_CHANGES, commit_ingest
from cdc_backfill.landing.spark.rows import as_log_rows, as_signal_rows
from cdc_backfill.landing.stream import InputError, InputFile, ingest_paths
from cdc_backfill.storage import s3_settings

log = logging.getLogger("cdc_backfill.ingest")

# Parsed columns no log file keeps and nothing here reads: left out of the checkpoint, which holds every
# event in the driver's memory (a before row is as wide as the after row where a table's replica
# identity is full)
NOT_LOGGED = ("before", "format", "snapshot")
# A collection's events an ingest writes into one log file at most: half a million typed events are
# tens of MB of Parquet; below that, a file an input file (the parse's tasks) would be many small ones
EVENTS_PER_LOG_FILE = 500_000
# A collection's events of one input file that its parse's worker types and writes as a log file of
# their own (``ingest.arrow_typing``) at the fewest; fewer go the JVM's way with the rest of the run's few
TYPED_MIN_EVENTS = 10_000


def log_files_of(events: int) -> int:
    """How many log files a collection's events of one ingest go into at most (pure): one a
    ``EVENTS_PER_LOG_FILE``, so that a collection of few events is one file, not one an input file."""
    return max(1, -(-events // EVENTS_PER_LOG_FILE))


def log_file_rows(
    parsed: DataFrame,
    collection: str,
    described: Described,
    signal_table: str,
    names: Sequence[str],
    files: int | None = None,
) -> DataFrame:
    """One collection's events as the rows of its log files (at most ``files`` of them), columns in the
    file's order."""
    events = parsed.where(F.col("quarantine_reason").isNull())
    if files is not None:
        events = events.coalesce(files)  # fewer tasks, not a shuffle: the parse has one a file
    if collection == signal_table:
        rows = as_signal_rows(events, collection, ts=True)
    else:
        columns, key = described
        rows = as_log_rows(events, collection, columns, key, ts=True)
    return rows.select(*names).sortWithinPartitions(POSITION)


# ``parse(options, typing)``: the run's input parsed (``PARSED_SCHEMA`` rows); ``typing``, where the
# input's workers may type and write log files themselves (``ingest.arrow_typing``), else None
Parse = Callable[[ParseOptions, "Typing | None"], DataFrame]


def ingest_files(
    spark: SparkSession,
    landing: Path,
    inputs: Sequence[InputFile],
    sources: ColumnSources,
    run: str | None = None,
) -> dict[str, Any]:
    """Land ``inputs`` in the log (the caller holds the ingest lock and left out what was ingested);
    ``sources`` types the collections found, or raises naming those it cannot (nothing written)."""
    if not inputs:
        return empty_summary(run, files=0)

    def parse(options: ParseOptions, typing: Typing | None) -> DataFrame:
        return parse_files(spark, inputs, options, typing)

    record = {"inputs": [i.to_dict() for i in inputs]}
    return land(spark, landing, parse, sources, record, empty_summary(run, files=len(inputs)))


def empty_summary(run: str | None, files: int) -> dict[str, Any]:
    """A run's summary before it read anything; ``run``: its name (default: now, to the millisecond)."""
    run = run or time.strftime("%Y%m%dT%H%M%S") + f"{int(time.time() * 1000) % 1000:03d}"
    return {"run": run, "files": files, "events": 0, "quarantined": 0, "collections": {}}


def land(
    spark: SparkSession,
    landing: Path,
    parse: Parse,
    sources: ColumnSources,
    record: dict[str, Any],
    summary: dict[str, Any],
    strict: bool = False,
    more: Callable[[DataFrame], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Parse the run's input, type each collection's events, write them as log files and commit them
    with one manifest that also holds ``record`` (what the run read: its input files, its offsets).
    ``summary``: the run's (``empty_summary``), filled in. ``strict``: a record that cannot be read
    refuses the run (InputError) instead of going to the quarantine. ``more``: what else the manifest
    records, read from the parsed rows."""
    landing = lake_path(landing)
    started = time.time()
    run = summary["run"]
    # timestamps as int64 microseconds, as pyarrow and DuckDB read them (not Spark's default INT96)
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    stage = staging_dir(landing) / run
    try:
        parsed, totals, described = parse_and_describe(spark, landing, parse, sources, stage, strict)
    except BaseException:
        rmtree(stage)  # what the workers typed and wrote
        raise
    written = write_collections(parsed, landing, stage, run, described, sources.signal_table, totals, summary)
    summary["quarantined"] = sum(r["quarantined"] for r in totals.values())
    # of the events, those the parse's workers typed themselves (``ingest.arrow_typing``)
    summary["typed_in_parse"] = sum(r["staged_events"] for r in totals.values())
    if summary["quarantined"]:
        summary["quarantine"] = quarantine(parsed, landing, run, summary["quarantined"])
    if summary["events"] == 0 and summary["quarantined"]:
        # nothing of the input could be read: not marked as ingested, so a corrected run takes it again
        first = parsed.where(F.col("quarantine_reason").isNotNull()).select("quarantine_reason").first()
        summary["nothing_landed"] = (
            f"every one of the {summary['quarantined']:,} records was quarantined (the first: {first[0]}); "
            f"nothing landed, the input is not marked as ingested: see {summary['quarantine']}"
        )
        rmtree(stage)
        return summary
    markers, changes = marker_records(parsed)
    summary["markers_skipped"] = markers
    if changes:
        summary[SCHEMA_CHANGES] = changes
        record = {**record, SCHEMA_CHANGES: changes}
    crash_point(INGEST_CRASH_ENV, "before-manifest")
    write_manifest(landing, run, {**record, **(more(parsed) if more else {})}, written, totals, summary)
    crash_point(INGEST_CRASH_ENV, "after-manifest")
    rmtree(stage)
    summary["seconds"] = round(time.time() - started, 1)
    return summary


def worker_typing(
    spark: SparkSession, landing: Path, known: dict[str, Described], signal_table: str, stage: Path
) -> Typing | None:
    """What the parse's workers type and write themselves: the collections described before the parse
    (``known``: the landing's and the column-type file's; the signal table's rows are text, typed by the
    JVM). None where the workers may not see the driver's disk: a local landing with a cluster's master."""
    if not isinstance(landing, S3Path) and not spark.sparkContext.master.startswith("local"):
        return None
    targets = {}
    for collection, (columns, key) in known.items():
        if collection == signal_table or not readable(columns):
            continue
        try:
            targets[collection] = (next_version(landing, collection, columns, key), tuple(key))
        except LogSchemaError:
            continue  # refused below, by name, as for every other path
    return Typing(str(stage), targets, TYPED_MIN_EVENTS, s3_settings() if isinstance(stage, S3Path) else {})


def parse_and_describe(
    spark: SparkSession,
    landing: Path,
    parse: Parse,
    sources: ColumnSources,
    stage: Path,
    strict: bool = False,
) -> tuple[DataFrame, dict[Any, Any], dict[str, Described]]:
    """The inputs parsed (``parse_inputs``) and each collection's columns and key. Where those differ from
    what the workers typed by (a wrapper among the inputs describes a collection anew), parsed again
    with the JVM typing every event. ``strict``: InputError for a record that cannot be read."""
    known = sources.known()  # a catalog's lookups, once for the run
    keys = {c: key for c, (_, key) in known.items()}
    typing = worker_typing(spark, landing, known, sources.signal_table, stage)
    parsed, totals = parse_inputs(parse, sources, keys, typing)
    if strict:
        refuse_unreadable(parsed, totals)
    described = described_collections(sources, totals)

    def typed_as_described(c: str) -> bool:
        if typing is None or c not in described:
            return False
        columns, key = described[c]
        return typing.targets[c] == (next_version(landing, c, columns, key), tuple(key))

    stale = [c for c, r in totals.items() if r["staged"] and not typed_as_described(c)]
    if stale:
        log.info("%s described anew by the inputs: parsing again, typed by the JVM", ", ".join(sorted(stale)))
        parsed.unpersist()
        rmtree(stage)
        parsed, totals = parse_inputs(parse, sources, keys, None)
        described = described_collections(sources, totals)
    return parsed, totals, described


def parse_inputs(
    parse: Parse,
    sources: ColumnSources,
    keys: dict[str, list[str]],
    typing: Typing | None,
) -> tuple[DataFrame, dict[Any, Any]]:
    """The input parsed once (every collection's write and the quarantine read it), and their
    ``collection_totals`` by collection; ``keys``: those known before the parse (``ColumnSources.known``),
    ``typing``: what the workers type and write themselves."""

    def parsed_with(keys: dict[str, list[str]]) -> tuple[DataFrame, dict[Any, Any]]:
        options = ParseOptions(key_columns=keys)
        parsed = parse(options, typing).drop(*NOT_LOGGED).localCheckpoint()
        return parsed, {r["collection"]: r for r in collection_totals(parsed).collect()}

    parsed, totals = parsed_with(keys)
    # records without a Kafka key whose collection's key only the catalog knows: parsed again with it
    found = {c: d[1] for c in keyless_collections(totals) if (d := sources.find(c)) is not None}
    if found:
        log.info("keys of %s found in the catalog: parsing again", ", ".join(sorted(found)))
        parsed.unpersist()
        if typing is not None:
            rmtree(lake_path(typing.stage))
        parsed, totals = parsed_with({**keys, **found})
    return parsed, totals


def parse_files(
    spark: SparkSession, inputs: Sequence[InputFile], options: ParseOptions, typing: Typing | None = None
) -> DataFrame:
    """The input files parsed: local ones read by the Python workers themselves, files on S3 through
    Spark's ``binaryFile`` source (and its S3 connector's settings)."""
    if all(not isinstance(i.path, S3Path) for i in inputs):
        return parse_local_files(spark, [i.path for i in inputs], options, typing)
    files = spark.read.format("binaryFile").load([str(i.path) for i in inputs])
    return parse_landing_files(files, options, typing)


def refuse_unreadable(parsed: DataFrame, totals: dict[Any, Any]) -> None:
    """InputError naming the first record that could not be read (by where it came from and its line or
    offset), when any could not; nothing is written before."""
    count = sum(r["quarantined"] for r in totals.values())
    if not count:
        return
    first = parsed.where(F.col("quarantine_reason").isNotNull()).orderBy("file", "line").first()
    raise InputError(
        f"{first['file']} offset {first['line']}: {first['quarantine_reason']} "
        f"({count:,} record(s) could not be read; nothing landed)"
    )


def described_collections(sources: ColumnSources, totals: dict[Any, Any]) -> dict[str, Any]:
    """Each collection's columns and key; ColumnsError, before anything is written, for events whose
    shape does not match them (nothing lands, no input is marked as ingested)."""
    wrapped = wrapped_descriptions(totals)
    if wrapped:
        log.info("column types of %s from the records' schema wrappers", ", ".join(sorted(wrapped)))
    described = sources.with_wrapped(wrapped).columns([c for c in totals if c is not None])
    refused = [
        why
        for coll, key_sets, names in event_shapes(totals)
        if coll in described and (why := shape_mismatch(coll, key_sets, names, described[coll]))
    ]
    if refused:
        raise ColumnsError(
            "refused, nothing landed: " + " | ".join(refused) + " (give the source these events came "
            "from as --source, or a --column-types file that describes them)"
        )
    return described


def write_collections(
    parsed: DataFrame,
    landing: Path,
    stage: Path,
    run: str,
    described: dict[str, Any],
    signal_table: str,
    totals: dict[Any, Any],
    summary: dict[str, Any],
) -> list[str]:
    """Each collection's events as log files of its current schema version (staged, then named by
    position); the files' paths under the log, for the manifest. Counts go into ``summary``."""
    written: list[str] = []
    for collection in sorted(described):
        columns, key = described[collection]
        version = describe(landing, collection, columns, key)
        target = log_version_dir(landing, collection, version.version)
        names = version.arrow_schema().names
        t0 = time.time()
        out = stage / collection
        n = totals[collection]["events"]
        named = []
        if n > totals[collection]["staged_events"]:  # events the workers left to the JVM
            files = log_files_of(n - totals[collection]["staged_events"])
            rows = log_file_rows(parsed, collection, described[collection], signal_table, names, files)
            rows.write.option("compression", "zstd").parquet(str(out))
            named += name_files(out, target, run, start=len(written))
        named += staged_files(typed_stage_dir(stage, collection), totals[collection]["staged"], target, run,
                              start=len(written) + len(named))  # fmt: skip
        written += [p.relative_to(landing / LOG_DIR).as_posix() for p in named]
        summary["collections"][collection] = {"events": n, "files": len(named), "version": version.version}
        summary["events"] += n
        log.info(
            "%s: %s events in %d log file(s), %.1f s", collection, f"{n:,}", len(named), time.time() - t0
        )
    return written


def quarantine(parsed: DataFrame, landing: Path, run: str, count: int) -> str:
    """The records that could not be read, with their file and line, in the landing's quarantine."""
    folder = quarantine_dir(landing) / f"ingest-{run}"
    bad = parsed.where(F.col("quarantine_reason").isNotNull()).select(*QUARANTINE_COLUMNS)
    bad.coalesce(1).write.mode("overwrite").json(str(folder))
    log.warning("%s records quarantined in %s", f"{count:,}", folder)
    return str(folder)


def write_manifest(
    landing: Path,
    run: str,
    record: dict[str, Any],
    written: list[str],
    totals: dict[Any, Any],
    summary: dict[str, Any],
) -> None:
    """The ingest's commit (``landing.manifests.commit_ingest``): one manifest naming the log files and
    what they came from (``record``: the input files, the offset ranges)."""
    last = max((r["last"] for r in totals.values() if r["last"] is not None), default=None)
    position = list(position_of_key(bytes(last))) if last is not None else []
    manifest = {
        "files": written,
        "position": position,
        "events": summary["events"],
        counts.COUNTS: {c: {k: totals[c][k] for k in counts.KEYS} for c in summary["collections"]},
        "origin": "ingest",
        **record,
        "quarantined": summary["quarantined"],
    }
    commit_ingest(landing, bytes(last or b""), run, manifest)


def ingest_landing(
    spark: SparkSession,
    landing: Path,
    paths: Sequence[Path] | None,
    sources: ColumnSources,
) -> dict[str, Any]:
    """Ingest ``paths`` (files or folders; None: the landing's own ``stream/``) into the landing's log,
    each file once; then move the landing's own stream files the log holds out of ``stream/``."""
    landing = lake_path(landing)
    with ingest_lock(landing):
        remove_unnamed(landing)
        given = ingest_paths(landing, None if paths is None else list(paths))
        todo, skipped = pending(landing, given) if given else ([], [])  # no stream/ to ingest: not an error
        summary = ingest_files(spark, landing, todo, sources)
        summary["already_ingested"] = [str(i.path) for i in skipped]
        summary["moved"] = len(move_ingested_stream(landing, [*todo, *skipped]))
    return summary
