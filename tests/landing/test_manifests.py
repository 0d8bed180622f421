"""The landing's commit: an ingest's manifest sorts where a reconcile after it finds it."""

from __future__ import annotations

from pathlib import Path

from cdc_backfill.landing.layout import rolls_dir
from cdc_backfill.landing.manifests import commit_ingest, roll_manifests


def test_a_batch_of_earlier_positions_is_named_after_the_manifests_landed_before_it(tmp_path: Path) -> None:
    commit_ingest(tmp_path, bytes.fromhex("0a"), "one", {"files": [], "position": [10]})
    commit_ingest(tmp_path, bytes.fromhex("05"), "two", {"files": [], "position": [5]})  # late records
    names = sorted(p.name for p in rolls_dir(tmp_path).glob("r*.json"))
    assert names == ["r0a-ione.json", "r0a-itwo.json"]
    # the manifest still says where its events end
    assert [m["position"] for m in roll_manifests(tmp_path)] == [[10], [5]]


def test_a_batch_of_later_positions_is_named_by_its_own(tmp_path: Path) -> None:
    commit_ingest(tmp_path, bytes.fromhex("0a"), "one", {"files": [], "position": [10]})
    commit_ingest(tmp_path, bytes.fromhex("0b"), "two", {"files": [], "position": [11]})
    assert sorted(p.name for p in rolls_dir(tmp_path).glob("r*.json")) == ["r0a-ione.json", "r0b-itwo.json"]
