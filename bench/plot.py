"""`make bench`'s plot: each figure of the benchmarks just run as a bar beside the bar of its reference
measured in the same run (the rows of bench/results/*.json that name one), a panel per benchmark, into
bench/results/summary.png.

    python -m bench.plot parse_events capture snapshot reconcile_1000000
"""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path
from typing import Any

from bench.common import RESULTS

MEASURE, REFERENCE = "#1f5f8b", "#b8c7d3"


def compared(names: list[str], results: Path = RESULTS) -> dict[str, list[dict[str, Any]]]:
    """benchmark -> its rows that carry a same-run reference (``reference_seconds``), in file order;
    a benchmark not run, or without such rows, is left out."""
    out = {}
    for name in names:
        path = results / f"{name}.json"
        if path.exists():
            rows = [r for r in json.loads(path.read_text())["rows"] if r.get("reference_seconds")]
            if rows:
                out[name] = rows
    return out


def draw(panels: dict[str, list[dict[str, Any]]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # a file, never a window
    import matplotlib.pyplot as plt

    heights = [1.0 + 0.7 * len(rows) for rows in panels.values()]
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})  # fmt: skip
    for ax, (name, rows) in zip(axes[:, 0], panels.items(), strict=True):
        ys = range(len(rows))
        mine = [r["seconds"] for r in rows]
        refs = [r["reference_seconds"] for r in rows]
        ax.barh([y - 0.2 for y in ys], mine, height=0.38, color=MEASURE, label="measured")
        ax.barh([y + 0.2 for y in ys], refs, height=0.38, color=REFERENCE, label="its reference, same run")
        for y, row, m, r in zip(ys, rows, mine, refs, strict=True):
            ax.text(m, y - 0.2, f" {m:.2f} s ({m / r:.2f}x)", va="center", fontsize=8)
            ax.text(r, y + 0.2, f" {r:.2f} s: {row['reference_name']}", va="center", fontsize=8)
        ax.set_yticks(list(ys), [textwrap.fill(r["measure"].strip(), 34) for r in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_title(name, loc="left", fontsize=10)
        ax.set_xlim(0, max(mine + refs) * 1.45)
        ax.set_xlabel("seconds (less is better)", fontsize=8)
    axes[0, 0].legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="+", help="result files to draw (bench/results/<name>.json)")
    ap.add_argument("--out", type=Path, default=RESULTS / "summary.png")
    args = ap.parse_args(argv)
    panels = compared(args.names)
    if not panels:
        print(f"nothing to draw: none of {', '.join(args.names)} is in {RESULTS} with a same-run reference")
        return 1
    draw(panels, args.out)
    print(f"plot: {args.out} ({', '.join(panels)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
