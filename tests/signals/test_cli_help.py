from __future__ import annotations

import argparse
import subprocess
import sys

from cdc_backfill.cli import build_parser
from cdc_backfill.cli.signals import SIGNAL_EPILOG


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_signal_help_shows_every_option_with_an_example() -> None:
    signal = _subparsers(build_parser())["signal"]
    actions = _subparsers(signal)
    assert set(actions) == {
        "init",
        "execute-snapshot",
        "stop-snapshot",
        "pause-snapshot",
        "resume-snapshot",
        "log",
        "list",
        "reread",
    }
    example_lines = [line for line in SIGNAL_EPILOG.splitlines() if "cdc-backfill signal" in line]
    for name, sub in actions.items():
        assert any(f"signal {name}" in line for line in example_lines), f"no example for {name}"
        for action in sub._actions:
            for flag in action.option_strings:
                if flag in ("-h", "--help"):
                    continue
                # --source and --signal-table are shown once; everything else by its own action
                assert flag in SIGNAL_EPILOG, f"{name} {flag} has no example"
    out = subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "signal", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "examples (every option)" in out
