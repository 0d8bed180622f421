"""Task bodies called from DAG files, so that DAG files only declare parameters and wire tasks."""

from __future__ import annotations

import logging

from cdc_backfill.airflow.hooks import CdcSourceHook

log = logging.getLogger(__name__)


def doctor_task(source_conn_id: str | None = None) -> list[dict[str, object]]:
    """Run the stack checks inside an Airflow worker; fail the task if any part fails."""
    from cdc_backfill.airflow.hooks import SourceNotConfigured
    from cdc_backfill.doctor import Check, check_java, check_postgres, check_spark, render, timed

    try:
        url = CdcSourceHook(source_conn_id or "").get_source_url()
        postgres = timed("PostgreSQL", lambda: check_postgres(url))
    except SourceNotConfigured as exc:
        postgres = Check("PostgreSQL", False, "the source connection is not defined", str(exc))
    checks = [
        postgres,
        timed("Java", check_java),
        timed("Spark", check_spark),
    ]
    log.info("stack checks:\n%s", render(checks))
    failed = [c.part for c in checks if not c.ok]
    if failed:
        raise RuntimeError(f"stack checks failed: {', '.join(failed)}")
    return [{"part": c.part, "ok": c.ok, "detail": c.detail} for c in checks]
