"""What ``ingest`` refuses before it starts Spark (plain file reads): a collection that nothing types,
found in the first records of each file to ingest. The Spark job still checks every record; this spares
the usual mistake (a file of a table that no catalog, column-type file, landing zone or record wrapper
describes) the Spark start-up before its one-line refusal.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import islice
from pathlib import Path

from cdc_backfill.events.model import ParseError, Quarantined
from cdc_backfill.events.parse import ParseOptions, file_records, loads, parse_lines
from cdc_backfill.ingest.column_sources import ColumnSources, Described
from cdc_backfill.ingest.connect_schemas import described_from_json, wrapped_columns
from cdc_backfill.landing.stream import event_files

SAMPLE_RECORDS = 1000  # per file: enough to meet every collection of a usual topic file


def head_records(path: Path, records: int = SAMPLE_RECORDS) -> list[bytes]:
    """The first ``records`` records of a file as ``ingest`` reads it: its lines, or the events of a file
    that is one JSON document (read whole: such files are small)."""
    with path.open("rb") as fh:  # a local file or an S3 object (cdc_backfill.lakepath)
        head = list(islice(fh, records))
    first = next((line for line in head if line.strip()), b"")
    try:
        loads(first) if first else None
    except ParseError:
        return file_records(path.read_bytes())[:records]
    return head


def check_sample(paths: Sequence[Path], sources: ColumnSources) -> None:
    """Raise ColumnsError (the job's own words) naming the collections of the files' first records that
    ``sources`` and the records' wrappers leave untyped."""
    options = ParseOptions(key_columns=sources.known_keys())
    seen: set[str] = set()
    wrapped: dict[str, Described] = {}
    for path in event_files(list(paths)):
        records = head_records(path)
        schemas: dict = {}  # what the file's schema line defined
        for lineno, item in parse_lines(records, str(path), options, schemas):
            if isinstance(item, Quarantined):
                continue
            for event in item:
                if event.collection is None or event.collection in seen:
                    continue
                seen.add(event.collection)
                told = wrapped_columns(records[lineno - 1], schemas)
                if told is not None:
                    wrapped[event.collection] = described_from_json(told)
    sources.with_wrapped(wrapped).columns(seen)
