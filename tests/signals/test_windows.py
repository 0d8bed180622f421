"""Debezium's windows in the signal table: counted, told apart from the native engine's, and judged
done when all are closed and none opened for a while."""

from __future__ import annotations

from cdc_backfill.signals import windows


def test_debezium_windows_are_done_when_all_closed_and_quiet() -> None:
    rows = [
        ("a-open", "snapshot-window-open", '{"openWindowTimestamp": "x"}'),
        ("a-close", "snapshot-window-close", None),
        ("n-open", "snapshot-window-open", '{"data-collection": "public.t", "signal": "sig-1"}'),  # native
        ("sig-1", "execute-snapshot", "{}"),
    ]
    scan = windows.scan_windows(rows)
    assert scan == windows.WindowScan(1, ())
    opened = windows.scan_windows([*rows, ("b-open", "snapshot-window-open", None)])
    assert opened.open_ids == ("b",)

    watch = windows.WindowWatch(quiet_seconds=10, baseline=0)
    assert not watch.observe(windows.WindowScan(0, ()), 0)  # first look
    assert not watch.observe(windows.WindowScan(1, ("a",)), 1)  # a window is open
    assert not watch.observe(windows.WindowScan(1, ()), 2)  # closed, not quiet yet
    assert not watch.observe(windows.WindowScan(1, ()), 11)
    assert watch.observe(windows.WindowScan(1, ()), 12.5)
    never_started = windows.WindowWatch(quiet_seconds=0)
    assert not never_started.observe(windows.WindowScan(3, ()), 0)
    assert not never_started.observe(windows.WindowScan(3, ()), 100)  # no window since the watch began
