"""What callers outside the engine (Airflow's hook, hence its operators and the progress page) ask of the
engine's progress table."""

from __future__ import annotations

import sqlalchemy as sa

from cdc_backfill.signals.queries import table_exists
from cdc_backfill.snapshot.progress import ProgressStore, RangeProgress


def read_progress(
    sa_engine: sa.Engine, schema: str | None, signal_id: str | None = None, collection: str | None = None
) -> list[RangeProgress]:
    """The engine's progress rows; none when the engine never ran against this source (it creates the
    table), so that asking before the first snapshot is not an error."""
    progress = ProgressStore(sa_engine, schema)
    with sa_engine.connect() as conn:
        if not table_exists(conn, progress.table):
            return []
    return list(progress.ranges(signal_id, collection))
