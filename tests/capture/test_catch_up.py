"""What verify does to bring a landing up to now, by what writes it (pure: nothing is called)."""

from __future__ import annotations

from pathlib import Path

from cdc_backfill.capture.catch_up import reach
from cdc_backfill.landing.layout import stream_dir

URL = "postgresql://cdc@127.0.0.1:5432/app"


def test_an_external_debezium_landed_by_a_sink_is_waited_for_not_fenced(tmp_path: Path) -> None:
    """Kafka Connect or Debezium Server landing JSON with no offsets or binding of ours: no fence of the
    native capture ever lands there, so verify waits for Debezium to land a marker and says it is not at
    one position."""
    stream_dir(tmp_path).mkdir(parents=True)
    (stream_dir(tmp_path) / "cdc_backfill.public.orders+0+0000000000.json").write_text("{}\n")
    got = reach(URL, tmp_path, capture="external")
    assert got.catch_up is None and got.refresh is not None
    assert got.not_exact == "the landing is Debezium's: its positions cannot be matched to a snapshot's"


def test_an_external_native_capture_is_fenced(tmp_path: Path) -> None:
    got = reach(URL, tmp_path, capture="external")  # nothing landed yet: the native capture's fence
    assert got.catch_up is not None and got.not_exact is None
