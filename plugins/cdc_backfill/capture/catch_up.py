"""Make a landing zone hold the stream past a position (verify at a position needs the events before
it): drain the landing's slot, as its capture would; or, while another capture follows that slot, write
a fence and wait until that capture has landed it."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cdc_backfill.capture.binding import SlotBindingError
from cdc_backfill.capture.debezium.settings import drain_command, is_debezium_landing, native_slots
from cdc_backfill.capture.fence import emit_fence, stream_passed
from cdc_backfill.capture.publication import DEFAULT_PUBLICATION, CaptureError, SlotInUse
from cdc_backfill.landing.stream import landed_position

log = logging.getLogger(__name__)

FOLLOW_TIMEOUT = 300.0  # seconds a following capture gets to land the fence


class CatchUpError(CaptureError):
    """The landing did not reach the position: the message says why and what to run."""


def native_slot(landing: Path) -> str | None:
    """The native capture's slot the landing is bound to; None when it has none (a Debezium landing,
    or one no capture wrote)."""
    slots = native_slots(landing)
    if len(slots) > 1:
        raise CatchUpError(f"{landing} is bound to the slots {', '.join(sorted(slots))}: drain it yourself")
    return slots[0] if slots else None


def wait_for_fence(url: str, landing: Path, timeout: float = FOLLOW_TIMEOUT, poll: float = 1.0) -> None:
    """Write a fence and wait until the landing holds it (a capture follows the slot)."""
    from cdc_backfill.config import source_engine

    sa_engine = source_engine(url)
    try:
        fence = emit_fence(sa_engine, "verify")
    finally:
        sa_engine.dispose()
    deadline = time.monotonic() + timeout
    while not stream_passed(landed_position(landing), fence):
        if time.monotonic() > deadline:
            raise CatchUpError(
                f"{landing} did not receive the stream up to now within {timeout:.0f} s: is the capture "
                "that follows its slot running? (`cdc-backfill capture status --landing ...`)"
            )
        time.sleep(poll)


def published_patterns(url: str, publication: str) -> list[str]:
    """The publication's tables as exact ``--collections`` patterns: a drain then adds none."""
    import sqlalchemy as sa

    from cdc_backfill.config import source_engine

    sa_engine = source_engine(url)
    try:
        with sa_engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = :p"),
                {"p": publication},
            ).all()
    finally:
        sa_engine.dispose()
    return [re.escape(f"{s}.{t}") for s, t in rows]


def drain_landing(url: str, landing: Path, slot: str, signal_table: str | None = None) -> None:
    """A drain of ``slot`` into ``landing``'s typed log, as its capture runs it (the tables its
    publication holds)."""
    from cdc_backfill.capture.postgres.loop import PostgresCapture

    patterns = published_patterns(url, DEFAULT_PUBLICATION) or None
    capture = PostgresCapture(url, landing, slot=slot, collections=patterns, signal_table=signal_table)
    stats = capture.run()
    log.info("drained %s: %s events", landing, stats.events)


def native_up_to_now(
    url: str, landing: Path, signal_table: str | None = None, timeout: float = FOLLOW_TIMEOUT
) -> Callable[[], None]:
    """Bring a native capture's landing up to now: drain its slot, or wait for the capture that follows
    it to land a fence. Either way the landing then passes every position taken before the call (the
    drain's marker and the fence are written after it), which is what verify at a position needs.
    Raises CatchUpError for a landing no native capture writes."""
    from cdc_backfill.landing.stream import stream_files

    slot = native_slot(landing)
    if slot is None:
        raise CatchUpError(f"{landing} is not written by `cdc-backfill capture postgres`")
    if stream_files(landing):
        raise CatchUpError(f"{landing} holds JSON stream files: `cdc-backfill ingest` them first")

    def up_to_now() -> None:
        try:
            drain_landing(url, landing, slot, signal_table)
        except SlotInUse:
            log.info("slot %s is followed by a capture: waiting for it to land a fence", slot)
            wait_for_fence(url, landing, timeout)

    return up_to_now


def debezium_refresh(url: str, landing: Path, signal_table: str | None = None) -> Callable[[], None]:
    """Bring a Debezium landing up to now for verify: Debezium's drain, run as its command is (its own
    JVM, in a process of its own); the batches it lands are ingested by the caller's session."""
    import os
    import subprocess
    import sys

    from cdc_backfill.config import SOURCE_URL_ENV

    cmd = drain_command([sys.executable, "-m", "cdc_backfill.cli"], str(landing), signal_table=signal_table)

    def refresh() -> None:
        env = {**os.environ, SOURCE_URL_ENV: url}  # not on the command line, where ps shows a password
        res = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if res.returncode != 0:
            last = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
            raise CatchUpError(f"Debezium's drain of {landing} failed: {last}")
        log.info(
            "drained %s with Debezium: %s", landing, res.stdout.strip().splitlines()[0] if res.stdout else ""
        )

    return refresh


def json_landed(landing: Path) -> bool:
    """Has anything landed JSON stream files here (waiting for ingest or moved by it)? A connector run
    by Kafka Connect or Debezium Server writes its files so, with no offsets or binding of ours."""
    from cdc_backfill.landing.layout import ingested_stream_dir, stream_dir

    return any(f.is_dir() and any(f.iterdir()) for f in (stream_dir(landing), ingested_stream_dir(landing)))


def debezium_followed(
    url: str, landing: Path, timeout: float = FOLLOW_TIMEOUT, poll: float = 1.0
) -> Callable[[], None]:
    """Bring up to now a landing a running Debezium writes (``capture debezium --follow``, or Kafka
    Connect or Debezium Server with a sink into ``stream/``): write a drain marker (a logical decoding
    message) and wait until a stream file holds it; the caller's session ingests them."""
    import uuid

    from cdc_backfill.capture.debezium.drain import drain_marker_in, pg_marker_writer
    from cdc_backfill.lakepath import S3Path
    from cdc_backfill.landing.layout import ingested_stream_dir, stream_dir
    from cdc_backfill.signals.marks import DRAIN_PREFIX

    def files() -> dict[tuple[str, int], Path]:
        """By (file, size): a sink may append to a local file it wrote; an object on S3 never changes,
        so no request per object and poll asks its size."""
        folders = (stream_dir(landing), ingested_stream_dir(landing))
        return {
            (str(p), -1 if isinstance(p, S3Path) else p.stat().st_size): p
            for f in folders
            if f.is_dir()
            for p in f.iterdir()
        }

    def refresh() -> None:
        read = set(files())  # landed before the marker is written: never holds it, never read
        marker = uuid.uuid4().hex
        pg_marker_writer(url)(DRAIN_PREFIX, marker)
        deadline = time.monotonic() + timeout
        while True:
            for seen, path in sorted(files().items()):
                if seen not in read:
                    read.add(seen)
                    if drain_marker_in(path.read_bytes(), marker):
                        return
            if time.monotonic() > deadline:
                raise CatchUpError(
                    f"{landing} did not receive Debezium's stream up to now within {timeout:.0f} s: is the "
                    "connector that writes it running, and does its <topic prefix>.message topic land there too?"
                )
            time.sleep(poll)

    return refresh


@dataclass(frozen=True)
class Reach:
    """How verify makes a landing hold the stream: past an exact position (``catch_up``), and up to now
    (``refresh``: the re-check where no exact position can be had, with why in ``not_exact``)."""

    catch_up: Callable[[int], None] | None = None
    refresh: Callable[[], None] | None = None
    not_exact: str | None = None


def past_any_position(up_to_now: Callable[[], None]) -> Reach:
    """A landing brought up to now also passes every position taken before: the catch-up is the same
    call, the position unused."""
    return Reach(catch_up=lambda _position: up_to_now(), refresh=up_to_now)


def reach(
    url: str, landing: Path | None, signal_table: str | None = None, capture: str | None = None
) -> Reach:
    """What verify can do with ``landing`` (the CLI and the DAG's verify task): ``capture`` is how the
    landing is written, ``external`` (a capture follows the slot: wait for a fence), ``debezium``, ``kafka``, or
    ``drain``/None (by what writes the landing: drain the native slot, or Debezium's)."""
    if landing is None:
        return Reach(not_exact="no landing zone: give one to verify both sides at one position")
    if capture == "kafka":
        return Reach(
            not_exact="the stream is read from Kafka: its positions cannot be matched to a snapshot's "
            "(verify once the writers are quiet, or compare again after the next reconcile)"
        )
    if not url.startswith(("postgresql", "postgres")):
        return Reach(not_exact="only a PostgreSQL source gives a snapshot at an exact position")
    try:
        debezium = (
            capture == "debezium"
            or is_debezium_landing(landing)
            or (capture == "external" and not native_slots(landing) and json_landed(landing))
        )
    except SlotBindingError as exc:
        return Reach(not_exact=str(exc))
    if debezium:
        return Reach(
            # a Debezium another process runs holds its slot: it lands a marker, no drain of ours can run
            refresh=debezium_followed(url, landing)
            if capture == "external"
            else debezium_refresh(url, landing, signal_table),
            not_exact="the landing is Debezium's: its positions cannot be matched to a snapshot's",
        )
    if capture == "external":
        return past_any_position(lambda: wait_for_fence(url, landing))
    try:
        return past_any_position(native_up_to_now(url, landing, signal_table))
    except CatchUpError as exc:
        return Reach(not_exact=str(exc))
