"""How the project's processes log: one setup for the CLI, the Spark job and the demo.

By default a user sees the project's own steps (``12:04:31 public.orders: merging``) and warnings from
anyone; libraries' INFO chatter (Spark's JVM, Airflow, SQLAlchemy) stays out. ``-v`` shows everything
with levels and logger names. ``CDC_BACKFILL_LOG_LEVEL`` sets the project's level without ``-v``.
"""

from __future__ import annotations

import logging
import os
import sys

from cdc_backfill.spark.log4j import SPARK_LOG_LEVEL_ENV

LOG_LEVEL_ENV = "CDC_BACKFILL_LOG_LEVEL"
VERBOSE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class StepFormatter(logging.Formatter):
    """``HH:MM:SS message``; the level is named only when it is a warning or worse."""

    def __init__(self) -> None:
        super().__init__(datefmt="%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        stamp = self.formatTime(record, self.datefmt)
        if record.levelno >= logging.WARNING:
            return f"{stamp} {record.levelname}: {text}"
        return f"{stamp} {text}"


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record comes (as ``logging.lastResort`` does), so a
    replaced or captured stderr never leaves it writing to a closed stream."""

    @property  # type: ignore[override]
    def stream(self):  # type: ignore[no-untyped-def]
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:  # type: ignore[no-untyped-def]
        pass


def setup_logging(verbose: bool = False) -> None:
    """Log to stderr: the project's INFO steps and everyone's warnings, or everything with ``verbose``.

    Called again (a second command in one process), it replaces only its own handler."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(old)
    handler = _StderrHandler()
    root.addHandler(handler)
    project = logging.getLogger("cdc_backfill")
    if verbose:
        # Spark's JVM too, in this process and the spark-submit processes it starts
        os.environ.setdefault(SPARK_LOG_LEVEL_ENV, "INFO")
        handler.setFormatter(logging.Formatter(VERBOSE_FORMAT))
        root.setLevel(logging.INFO)
        project.setLevel(logging.DEBUG)
    else:
        handler.setFormatter(StepFormatter())
        root.setLevel(logging.WARNING)
        project.setLevel(os.environ.get(LOG_LEVEL_ENV, "INFO").upper())
    # py4j logs at INFO from finalizers at interpreter exit, after the streams may be closed.
    logging.getLogger("py4j").setLevel(logging.INFO if verbose else logging.WARNING)
