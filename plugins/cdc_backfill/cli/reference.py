"""The command line's reference page (docs/reference/cli.md): every command's ``--help``, as the parsers
print it. ``python -m cdc_backfill.cli.reference > docs/reference/cli.md`` writes it; a test keeps the
page equal to what the parsers print."""

from __future__ import annotations

import argparse
import os


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    out = []
    for action in parser._actions:  # argparse keeps its subparsers only here
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append((name, sub))
    return out


def cli_reference() -> str:
    """The page: a section per command and subcommand, each its help at a width of 100 columns."""
    from cdc_backfill.cli.main import build_parser

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: the page is the same everywhere
    root = build_parser()
    lines = [
        "# Command line reference",
        "",
        "Every command's `--help`, as `cdc-backfill` prints it "
        "(`python -m cdc_backfill.cli.reference > docs/reference/cli.md` writes this page).",
        "",
    ]

    def section(path: str, parser: argparse.ArgumentParser, depth: int) -> None:
        lines.extend([f"{'#' * depth} `{path}`", "", "```text", parser.format_help().rstrip(), "```", ""])
        for name, sub in _subcommands(parser):
            section(f"{path} {name}", sub, min(depth + 1, 4))

    section("cdc-backfill", root, 2)
    return "\n".join(lines)


if __name__ == "__main__":
    print(cli_reference())
