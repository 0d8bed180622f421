"""Change events: every input format parsed into one canonical event with an exact position.

Pure Python (orjson for speed): no Spark, no Airflow. ``cdc_backfill.spark.events`` runs the same
parser inside Spark for landing zones at scale.
"""

from __future__ import annotations

from cdc_backfill.events.model import ChangeEvent, ParseError, Quarantined
from cdc_backfill.events.parse import ParseOptions, ParseResult, parse_file, parse_lines, parse_record

__all__ = [
    "ChangeEvent",
    "ParseError",
    "ParseOptions",
    "ParseResult",
    "Quarantined",
    "parse_file",
    "parse_lines",
    "parse_record",
]
