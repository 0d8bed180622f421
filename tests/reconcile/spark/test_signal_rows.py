"""The signal rows read on the driver with Arrow (``reconcile.signal_files``) are the ones Spark collects
from the same log files (``merge.signal_rows``): after a position, and carried whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_backfill.events.positions import position_key, position_of_key
from cdc_backfill.landing.event_log import read_schema
from cdc_backfill.landing.layout import CARRY_ROWS, CARRY_SIGNALS
from cdc_backfill.landing.spark.rows import collection_log_files, read_log_rows, signal_schema
from cdc_backfill.reconcile.runs import landed_log_files
from cdc_backfill.reconcile.signal_files import carried_signal_files, landed_signal_rows
from cdc_backfill.reconcile.spark.merge import after_position, signal_rows
from cdc_backfill.state.table import StateError
from tests.support.pg import snapshot_under_writers
from tests.support.workload import seed

pytestmark = [pytest.mark.spark, pytest.mark.pg, pytest.mark.slow]

SIGNAL = "public.cdc_signal"


def as_set(rows) -> set:  # type: ignore[no-untyped-def]
    return {(r.id, r.op, bytes(r.position), r.data, r.type) for r in rows}


def test_arrow_reads_the_signal_rows_spark_collects(spark, fresh_db: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    seed(fresh_db, orders=300)
    landing = tmp_path / "landing"
    snapshot_under_writers(fresh_db, landing, ["public.orders"], chunk_size=60, seed_value=3)
    files = collection_log_files(landing, SIGNAL, landed_log_files(landing).files)
    doc = read_schema(landing, SIGNAL)
    signals = read_log_rows(spark, {v.version: v.columns for v in doc.versions}, files, signal_schema())  # type: ignore[union-attr]
    everything = signal_rows(signals)
    assert len(everything) > 10  # windows' opens and closes, the snapshot's marks
    assert as_set(landed_signal_rows(files, [], None)) == as_set(everything)

    middle = sorted(bytes(r.position) for r in everything)[len(everything) // 2]
    later = signal_rows(after_position(signals, position_of_key(middle)))
    assert 0 < len(later) < len(everything)
    assert as_set(landed_signal_rows(files, [], position_key(position_of_key(middle)))) == as_set(later)

    # a run's carry, as Spark writes it beside a state: read whole, whatever its positions
    carry = tmp_path / "carry"
    signals.write.parquet(str(carry / CARRY_SIGNALS))
    (carry / CARRY_ROWS).mkdir()
    carried = carried_signal_files(carry)
    assert carried and all(p.suffix == ".parquet" for p in carried)
    both = landed_signal_rows(files, carried, position_key(position_of_key(middle)))
    assert as_set(both) == as_set(everything)
    assert [bytes(r.position) for r in both] == sorted(bytes(r.position) for r in both)
    assert carried_signal_files(None) == []
    with pytest.raises(StateError, match="a carry of a release before the typed log"):
        carried_signal_files(tmp_path / "canonical-carry")
