"""What follows a repair signal, as command lines a user runs as printed (pure): the snapshot engine reads
the differing ranges, the capture drains the stream up to the last window, the reconcile puts the READs
in the state, verify compares again. ``verify --repair --wait`` runs exactly these lines.

With Debezium as the engine (a landing its connector writes), Debezium reads the chunks: the capture
follows its snapshot to the end, ``ingest`` moves the batches into the log, then the same reconcile and
verify.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cdc_backfill.capture.debezium.settings import drain_command, is_debezium_landing
from cdc_backfill.config import mask_url
from cdc_backfill.program import program


@dataclass(frozen=True)
class RepairSteps:
    commands: list[list[str]]  # each a whole command line: ``cdc-backfill`` as this user runs it, ...
    note: str | None  # what the user must know to run them (a password left out)


def source_args(typed: str | None) -> tuple[list[str], str | None]:
    """``--source URL`` as the user typed it; nothing when the URL came from the environment or the
    config file (the commands find it there too). A URL with a password is not printed back: the
    commands then read it from CDC_BACKFILL_SOURCE_URL."""
    if not typed:
        return [], None
    if mask_url(typed) != typed:  # it has a password
        return [], "export CDC_BACKFILL_SOURCE_URL='<the --source URL>' first: its password is not printed"
    return ["--source", typed], None


def landing_engine(landing: Path) -> str:
    """``debezium`` when Debezium writes the landing zone (``capture.debezium.settings``'s one rule), else
    ``native``."""
    from cdc_backfill.capture.binding import SlotBindingError

    try:
        return "debezium" if is_debezium_landing(landing) else "native"
    except SlotBindingError:  # the capture each step runs refuses it, in its own words
        return "native"


def repair_command(
    source: str | None, landing: str, state: str, collection: str, signal_table: str | None = None
) -> tuple[list[str], str | None]:
    """The one command that sends the repair of ``collection``'s differing ranges and runs the steps
    that complete it (``verify --repair --wait``); what the user must know to run it."""
    cli = program()
    src, note = source_args(source)
    sig = ["--signal-table", signal_table] if signal_table else []
    return [
        cli, "verify", *src, "--state", state, "--collection", collection,
        "--repair", "--wait", "--landing", landing, *sig,
    ], note  # fmt: skip


def repair_steps(
    source: str | None,
    landing: str,
    state: str,
    collection: str,
    signal_id: str,
    engine: str = "native",
    signal_table: str | None = None,
) -> RepairSteps:
    """The commands that complete a repair whose signal ``signal_id`` was sent."""
    cli = program()
    src, note = source_args(source)
    sig = ["--signal-table", signal_table] if signal_table else []
    if engine == "debezium":
        first = [
            drain_command([cli], landing, src, signal_table, until_snapshot=signal_id),
            [cli, "ingest", "--landing", landing],
        ]
    else:
        first = [
            [cli, "snapshot", "run", "--once", *src, "--landing", landing, *sig],
            [cli, "capture", "postgres", *src, "--landing", landing, *sig, "--drain"],
        ]
    return RepairSteps(
        [
            *first,
            [cli, "reconcile", "--landing", landing, "--state", state],
            [cli, "verify", *src, "--state", state, "--collection", collection],
        ],
        note,
    )
