"""`make bench`'s plot: a panel per benchmark whose rows name a same-run reference, each figure beside
its reference."""

from __future__ import annotations

import json
from pathlib import Path

from bench.plot import compared, draw


def result(folder: Path, name: str, rows: list[dict]) -> None:
    (folder / f"{name}.json").write_text(json.dumps({"benchmark": name, "rows": rows}))


def test_each_figure_is_drawn_beside_its_reference(tmp_path: Path) -> None:
    result(tmp_path, "capture", [
        {"measure": "capture postgres --drain", "items": 10, "seconds": 1.5, "rate": 6.7,
         "reference_name": "raw pgoutput receive", "reference_seconds": 1.4},
        {"measure": "  reference: raw pgoutput receive", "items": 10, "seconds": 1.4, "rate": 7.1},
    ])  # fmt: skip
    result(tmp_path, "kafka_follow", [{"measure": "p95", "items": 1, "seconds": 4.0, "rate": 0.0}])

    panels = compared(["capture", "kafka_follow", "snapshot"], tmp_path)
    # the reference row itself is not a panel's bar; a bench without references, or not run, has no panel
    assert {k: [r["measure"] for r in v] for k, v in panels.items()} == {
        "capture": ["capture postgres --drain"]
    }
    draw(panels, tmp_path / "plot" / "summary.png")
    assert (tmp_path / "plot" / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
