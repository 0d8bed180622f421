"""One entry point for every format: detect, parse, and quarantine what cannot be parsed."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from cdc_backfill.events.dataworks import is_dataworks, parse_dataworks
from cdc_backfill.events.debezium import follows, parse_debezium, plain_postgres, schema_line, with_schemas
from cdc_backfill.events.model import ChangeEvent, ParseError, Quarantined, dumps
from cdc_backfill.events.positions import PgStream
from cdc_backfill.lakepath import S3Path, lake_path

FORMATS = ("auto", "debezium", "dataworks")
RECORD_EXCERPT = 2000  # characters of a quarantined record kept beside its reason


@dataclass(frozen=True)
class ParseOptions:
    """What a landing file does not say about itself."""

    format: str = "auto"
    collection: str | None = None  # the table of every record in the file (a sink's topic)
    key_columns: Mapping[str, Sequence[str]] | None = None  # per collection, for records without a key

    def __post_init__(self) -> None:
        if self.format not in FORMATS:
            raise ValueError(f"unknown format {self.format!r}: one of {', '.join(FORMATS)}")


DEFAULT_OPTIONS = ParseOptions()


def loads(text: str | bytes) -> Any:
    """JSON to Python; integers beyond 64 bits (large SCNs, sequenceIds) fall back to the slow parser."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "Integer" in str(exc) or "number" in str(exc).lower():
            try:
                return json.loads(text)
            except ValueError:
                pass
        raise ParseError(f"not valid JSON: {exc}") from None


def parse_record(
    record: Any,
    options: ParseOptions = DEFAULT_OPTIONS,
    offset: tuple[int, ...] | None = None,
    order: PgStream | None = None,
    key_change: int | None = None,
) -> list[ChangeEvent]:
    """The canonical events of one decoded record (possibly none: a tombstone); ``order``: the stream's
    (see :class:`~cdc_backfill.events.positions.PgStream`); ``key_change``: the half of a key change
    the record's Kafka headers name (``events.debezium.parse_debezium``)."""
    if not isinstance(record, dict):
        raise ParseError(f"a record must be a JSON object, not {type(record).__name__}")
    fmt = options.format
    if fmt == "dataworks" or (fmt == "auto" and is_dataworks(record)):
        return parse_dataworks(record, collection=options.collection)
    return parse_debezium(
        record,
        collection=options.collection,
        key_columns=options.key_columns,
        offset=offset,
        order=order,
        key_change=key_change,
    )


@dataclass
class ParseResult:
    events: list[ChangeEvent] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    records: int = 0
    skipped: int = 0  # tombstones and blank lines: nothing to apply, nothing lost


def parse_lines(
    lines: Iterable[str | bytes],
    file: str | None = None,
    options: ParseOptions = DEFAULT_OPTIONS,
    schemas: dict[str, Any] | None = None,
) -> Iterator[tuple[int, list[ChangeEvent] | Quarantined]]:
    """(line number, events or the quarantine entry) for each non-blank line of a JSON-lines file, read
    as one stream in delivery order. A schema line is no record: it defines the schemas later lines
    name (``events.debezium.schema_line``), gathered into ``schemas`` when the caller gives one. Nor is a
    ``follows`` line: the record before the file, read for its place only (``events.debezium.follows``)."""
    order = PgStream()
    schemas = {} if schemas is None else schemas
    debezium = options.format != "dataworks"
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = loads(line)
            if debezium and type(record) is dict:  # the common record first, by the shortest path
                plain = plain_postgres(record, order)
                if plain is not None:
                    yield lineno, plain
                    continue
            defined = schema_line(record)
            if defined is not None:
                schemas.update(defined)
                continue
            before = follows(record)
            if before is not None:  # the file before's last record: placed, not yielded
                _place(before, options, order)
                continue
            yield lineno, parse_record(with_schemas(record, schemas), options, order=order)
        except ParseError as exc:
            text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
            yield lineno, Quarantined(str(exc), file, lineno, text.rstrip("\n")[:RECORD_EXCERPT])
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            # A shape no rule above foresaw: still the record's fault, still quarantined with a reason.
            text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
            reason = f"unexpected shape: {type(exc).__name__}: {exc}"
            yield lineno, Quarantined(reason, file, lineno, text.rstrip("\n")[:RECORD_EXCERPT])


def _place(record: dict[str, Any], options: ParseOptions, order: PgStream) -> None:
    """Read a record only for its place in the stream (a key change's delete a file ends with): a
    record that does not parse leaves the next create unpaired, and it is then re-read, as before."""
    try:
        parse_record(record, options, order=order)
    except (ParseError, KeyError, TypeError, ValueError, AttributeError):
        pass


def iter_file(
    path: str, options: ParseOptions = DEFAULT_OPTIONS
) -> Iterator[tuple[int, list[ChangeEvent] | Quarantined]]:
    """Stream (line number, events or quarantine entry) from a JSON-lines file, one line in memory.

    A file whose first line is not a JSON value but which as a whole is a JSON document with an
    ``events`` list (the fixture form) is read as that list; its "lines" are the list's indexes.
    """
    where = lake_path(path)
    # an S3 object is read whole (a stream file is at most a roll's size): the lines are read twice
    with io.BytesIO(where.read_bytes()) if isinstance(where, S3Path) else open(where, "rb") as fh:
        first = fh.readline()
        while first and not first.strip():
            first = fh.readline()
        if not _is_json(first):
            fh.seek(0)
            records = document_records(fh.read())
            if records is not None:
                yield from parse_lines(records, path, options)
                return
        fh.seek(0)
        yield from parse_lines(fh, path, options)


def file_records(data: bytes) -> list[bytes]:
    """The records of a whole file's bytes, as :func:`iter_file` reads them: its lines, or the ``events``
    of a file that is one JSON document (what ``ingest`` parses, so both accept the same files)."""
    first = next((line for line in data.splitlines() if line.strip()), b"")
    if not _is_json(first):
        records = document_records(data)
        if records is not None:
            return records
    return data.splitlines()


def document_records(data: bytes) -> list[bytes] | None:
    """The events of a file that is one JSON document with an ``events`` list (the fixture form, often
    pretty-printed over many lines), one JSON text each; None for any other file."""
    try:
        doc = loads(data)
    except ParseError:
        return None
    if isinstance(doc, dict) and isinstance(doc.get("events"), list):
        return [dumps(e) for e in doc["events"]]
    return None


def _is_json(line: bytes) -> bool:
    try:
        loads(line)
    except ParseError:
        return False
    return True


def parse_file(path: str, options: ParseOptions = DEFAULT_OPTIONS) -> ParseResult:
    """All events and quarantined records of one file (see :func:`iter_file`), counted."""
    result = ParseResult()
    for _lineno, item in iter_file(path, options):
        result.records += 1
        if isinstance(item, Quarantined):
            result.quarantined.append(item)
        elif not item:
            result.skipped += 1
        else:
            result.events.extend(item)
    return result
