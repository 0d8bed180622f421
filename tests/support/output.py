"""What a command printed, read as a user reads it."""

from __future__ import annotations

import re

# Spark's log4j INFO lines: "25/11/23 21:12:33 INFO BlockManager: ..." or "21:12:33 INFO SparkContext ..."
SPARK_INFO = re.compile(r"\bINFO\s+[A-Z][A-Za-z0-9$]+(:|\s)")


def spark_info_lines(text: str) -> list[str]:
    """The lines of ``text`` that are Spark's INFO log."""
    return [line for line in text.splitlines() if SPARK_INFO.search(line)]
