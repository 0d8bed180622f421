"""`make bench`'s closing table: every figure of the benchmarks just run, next to its reference from the
same run, read from bench/results/*.json and saved together as bench/results/summary.json."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.common import RESULTS


def collect(names: list[str], results: Path = RESULTS) -> list[dict[str, Any]]:
    """(benchmark, measure, items, rate, reference) rows of the named result files, in that order."""
    out = []
    for name in names:
        path = results / f"{name}.json"
        if not path.exists():
            out.append({"benchmark": name, "measure": "(not run)", "items": 0, "rate": 0.0, "reference": ""})
            continue
        doc = json.loads(path.read_text())
        for row in doc["rows"]:
            out.append({"benchmark": name, "measure": row["measure"].strip(), "items": row["items"],
                        "rate": row["rate"], "reference": row.get("reference", "")})  # fmt: skip
    return out


def render(rows: list[dict[str, Any]]) -> str:
    header = f"{'benchmark':<18} {'measure':<58} {'items':>11} {'per second':>12}  reference (same run)"
    lines = [header, "-" * len(header)]
    for r in rows:
        lines.append(
            f"{r['benchmark']:<18} {r['measure'][:58]:<58} {r['items']:>11,} {r['rate']:>12,.0f}  {r['reference']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("names", nargs="+", help="result files to include (bench/results/<name>.json)")
    args = ap.parse_args(argv)
    rows = collect(args.names)
    print(render(rows))
    (RESULTS / "summary.json").write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
