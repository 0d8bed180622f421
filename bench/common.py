"""Shared helpers for benchmarks: timing, the results table, and saving figures as JSON."""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def report(name: str, rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """Print a table (what, seconds, items/s, vs reference) and save it with ``meta`` as JSON."""
    header = f"{'measure':<48} {'items':>10} {'seconds':>9} {'items/s':>12}  reference"
    lines = [header, "-" * len(header)]
    for r in rows:
        ref = r.get("reference", "")
        lines.append(f"{r['measure']:<48} {r['items']:>10,} {r['seconds']:>9.2f} {r['rate']:>12,.0f}  {ref}")
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    out = {
        "benchmark": name,
        "machine": platform.node(),
        "python": platform.python_version(),
        **meta,
        "rows": rows,
    }
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=2))
    return text
