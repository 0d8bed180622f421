from __future__ import annotations

from pathlib import Path

from cdc_backfill.capture.landing import LandingWriter
from cdc_backfill.landing.layout import stream_file_name as file_name
from cdc_backfill.landing.stream import landed_position


def test_only_whole_transactions_in_finished_files_are_confirmed(tmp_path: Path) -> None:
    w = LandingWriter(tmp_path, roll_bytes=10, roll_seconds=3600)
    assert w.roll() == 0  # nothing written, nothing to confirm
    w.write(b'{"a":1}\n', 100, 90)
    w.write(b'{"a":2}\n', 100, 95)
    w.commit_done(end_lsn=110)
    w.write(b'{"a":3}\n', 200, 150)  # a transaction still open
    assert w.due
    assert w.roll() == 110  # the open transaction's end is not confirmed
    [landed] = (tmp_path / "stream").glob("*.jsonl")
    assert landed.name == file_name(100, 200, 150)
    assert landed.read_bytes().count(b"\n") == 3
    assert landed_position(tmp_path) == (200, 150)
    w.commit_done(end_lsn=210)
    assert w.roll() == 210  # the empty current file: the commit is now wholly landed
    w.commit_done(end_lsn=300)  # an empty transaction is confirmable at once
    assert w.durable_end_lsn == 300


def test_partial_files_of_a_crashed_run_are_removed(tmp_path: Path) -> None:
    w = LandingWriter(tmp_path)
    w.write(b"x\n", 1, 1)
    assert list((tmp_path / "stream").glob(".cdc-*.part"))
    LandingWriter(tmp_path)  # restart
    assert not list((tmp_path / "stream").glob(".cdc-*.part"))
    assert landed_position(tmp_path) == (0, 0)
