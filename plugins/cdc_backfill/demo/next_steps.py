"""What the demo prints at its end for the user to run next (pure): each command runs as printed."""

from __future__ import annotations

import shlex
from pathlib import Path

TABLES = ("public.customers", "public.order_lines")  # the demo's collections (``demo.TABLES``)


def next_commands(
    cli: str, state: Path, with_make: bool, url: str | None = None, landing: Path | None = None
) -> list[tuple[str, str]]:
    """(command, what it shows) printed at the end of the demo; each runs as printed (pure). ``url``:
    the kept server's (``demo --keep``), for the commands that talk to the source."""
    st = shlex.quote(str(state))
    live: list[tuple[str, str]] = []
    if url and landing:
        src, ld = f"--source {shlex.quote(url)}", shlex.quote(str(landing))
        coll = TABLES[0]
        live = [
            (f"{cli} signal list {src}", "the signals and their statuses"),
            (f"{cli} snapshot status {src}", "the snapshot's chunks and rows per collection"),
            (f"{cli} capture status {src} --landing {ld}", "the slot and what the landing holds"),
            (
                f"{cli} verify {src} --state {st} --collection {coll}",
                "the state against the source, by range",
            ),
            (
                f"{cli} verify {src} --state {st} --collection {coll} --repair --wait --landing {ld}",
                "a repair, done to the end (nothing to repair when every range is equal)",
            ),
        ]
    cmds = [
        (f"{cli} state --state {st}", "each collection: rows, version, stream position"),
        (f"{cli} state --state {st} public.order_lines --limit 5", "a collection's first rows"),
        (
            f'{cli} state --state {st} --sql "SELECT tier, count(*) AS customers FROM customers GROUP BY 1 ORDER BY 1"',
            "any SQL over the state (DuckDB)",
        ),
    ]
    cmds += live
    if with_make and url and landing:  # Airflow on the kept server and the demo's lake
        lake = f"CDC_BACKFILL_LANDING={shlex.quote(str(landing.resolve()))} CDC_BACKFILL_STATE={shlex.quote(str(state.resolve()))}"
        cmds.append((
            f"CDC_BACKFILL_SOURCE_URL={shlex.quote(url)} {lake} make airflow",
            "the Airflow UI on the demo's source and lake: its progress page shows this snapshot (Ctrl-C stops it)",
        ))  # fmt: skip
    elif with_make:
        cmds.append(
            ("make airflow", "the Airflow UI with this project's DAGs, no source yet (Ctrl-C stops it)")
        )
    return cmds
