"""Signals: Debezium's signal table and JSON, validated against the source before anything is written.

Pure Python and SQLAlchemy: no Spark, no Airflow.
"""

from __future__ import annotations

from cdc_backfill.signals.model import AdditionalCondition, Signal, SignalError, new_signal_id
from cdc_backfill.signals.validate import CollectionPlan, ValidatedSignal, validate

__all__ = [
    "AdditionalCondition",
    "CollectionPlan",
    "Signal",
    "SignalError",
    "ValidatedSignal",
    "new_signal_id",
    "validate",
]
