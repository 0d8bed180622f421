"""``capture status``: the slot's lag and last confirmed LSN, and what the landing zone holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlalchemy as sa

from cdc_backfill.capture.publication import DEFAULT_SLOT, CaptureError
from cdc_backfill.config import mask_url, source_engine
from cdc_backfill.lakepath import lake_path
from cdc_backfill.landing.layout import capture_log_files
from cdc_backfill.landing.stream import landed_position


def capture_status(url: str, landing: Path | None, slot: str = DEFAULT_SLOT) -> dict[str, Any]:
    """Slot lag, last confirmed LSN, and what the landing zone holds."""
    sa_engine = source_engine(url)
    try:
        with sa_engine.connect() as conn:
            row = conn.execute(
                sa.text(
                    "SELECT active, confirmed_flush_lsn::text AS confirmed, restart_lsn::text AS restart, "
                    "pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn)::bigint AS lag "
                    "FROM pg_replication_slots WHERE slot_name = :s"
                ),
                {"s": slot},
            ).first()
    except sa.exc.OperationalError as exc:
        raise CaptureError(f"cannot reach {mask_url(url)}: {str(exc.orig).strip()}") from None
    finally:
        sa_engine.dispose()
    out: dict[str, Any] = {"slot": slot}
    if row is None:
        out.update(exists=False)
    else:
        out.update(
            exists=True,
            active=row.active,
            confirmed_lsn=row.confirmed,
            restart_lsn=row.restart,
            lag_bytes=row.lag,
        )
    if landing is not None:
        landing = lake_path(landing)
        files = capture_log_files(landing)
        newest = max(files, key=lambda f: f.stat().st_mtime, default=None)
        commit, lsn = landed_position(landing)
        out.update(
            files=len(files),
            bytes=sum(f.stat().st_size for f in files),
            last_file=newest.name if newest else None,
            landed_position=[commit, lsn],
        )
    return out
