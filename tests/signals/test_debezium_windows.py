"""Debezium's windows in the signal table: counted, told apart from the native engine's, and judged
done when all are closed and none opened for a while."""

from __future__ import annotations

from cdc_backfill.signals import debezium_windows


def test_debezium_windows_are_done_when_all_closed_and_quiet() -> None:
    rows = [
        ("a-open", "snapshot-window-open", '{"openWindowTimestamp": "x"}'),
        ("a-close", "snapshot-window-close", None),
        ("n-open", "snapshot-window-open", '{"data-collection": "public.t", "signal": "sig-1"}'),  # native
        ("sig-1", "execute-snapshot", "{}"),
    ]
    scan = debezium_windows.scan_windows(rows)
    assert scan == debezium_windows.WindowScan(1, ())
    opened = debezium_windows.scan_windows([*rows, ("b-open", "snapshot-window-open", None)])
    assert opened.open_ids == ("b",)

    watch = debezium_windows.WindowWatch(quiet_seconds=10, baseline=0)
    assert not watch.observe(debezium_windows.WindowScan(0, ()), 0)  # first look
    assert not watch.observe(debezium_windows.WindowScan(1, ("a",)), 1)  # a window is open
    assert not watch.observe(debezium_windows.WindowScan(1, ()), 2)  # closed, not quiet yet
    assert not watch.observe(debezium_windows.WindowScan(1, ()), 11)
    assert watch.observe(debezium_windows.WindowScan(1, ()), 12.5)
    never_started = debezium_windows.WindowWatch(quiet_seconds=0)
    assert not never_started.observe(debezium_windows.WindowScan(3, ()), 0)
    assert not never_started.observe(
        debezium_windows.WindowScan(3, ()), 100
    )  # no window since the watch began


def test_insert_delete_windows_are_seen_while_open() -> None:
    """``insert_delete`` deletes each open row at its window's close: the table never counts more windows,
    but a window seen open means the snapshot started, and it is done once none is open and quiet."""
    rows = [("c-open", "snapshot-window-open", '{"openWindowTimestamp": "x"}')]
    assert debezium_windows.scan_windows(rows) == debezium_windows.WindowScan(1, ("c",))
    watch = debezium_windows.WindowWatch(quiet_seconds=10, baseline=0)
    assert not watch.observe(debezium_windows.WindowScan(0, ()), 0)  # the signal sent, no window yet
    assert not watch.observe(debezium_windows.WindowScan(1, ("c",)), 3)  # a window open
    assert not watch.observe(debezium_windows.WindowScan(0, ()), 6)  # its row deleted at the close
    assert not watch.observe(debezium_windows.WindowScan(1, ("d",)), 9)  # the next one
    assert not watch.observe(debezium_windows.WindowScan(0, ()), 12)
    assert not watch.observe(debezium_windows.WindowScan(0, ()), 21)
    assert watch.observe(debezium_windows.WindowScan(0, ()), 22.5)  # quiet for 10 s: done
    busy = debezium_windows.WindowWatch(quiet_seconds=0)
    assert not busy.observe(
        debezium_windows.WindowScan(1, ("z",)), 0
    )  # open before the watch began: not ours
    assert not busy.observe(debezium_windows.WindowScan(0, ()), 100)
