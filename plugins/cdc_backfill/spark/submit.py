"""spark-submit command lines, built as data (pure; no pyspark import) and tested as such."""

from __future__ import annotations

from collections.abc import Sequence

from cdc_backfill.runtime import project_root


def reconcile_command(
    landing: str,
    state: str,
    collections: Sequence[str] | None = None,
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
    spark_submit: str = "spark-submit",
) -> list[str]:
    job = project_root() / "spark_jobs" / "reconcile.py"
    cmd = [spark_submit, "--master", master, "--name", "cdc_backfill_reconcile"]
    for key, value in sorted((conf or {}).items()):
        cmd += ["--conf", f"{key}={value}"]
    cmd += [str(job), "--landing", landing, "--state", state]
    if collections:
        cmd += ["--collections", *collections]
    return cmd
