"""Records that cannot be parsed are quarantined with a reason, file and line; the rest go on."""

from __future__ import annotations

import json
from pathlib import Path

from cdc_backfill.events import parse_file

GOOD = {"key": {"id": 1}, "value": {"before": None, "after": {"id": 1}, "op": "c",
        "source": {"connector": "postgresql", "schema": "s", "table": "t", "lsn": 5, "sequence": '["1","5"]'}}}  # fmt: skip


def _with(**changes: object) -> str:
    value = {**GOOD["value"], **changes}
    return json.dumps({"key": GOOD["key"], "value": value})


def test_bad_records_are_quarantined_and_counted(tmp_path: Path) -> None:
    lines = [
        json.dumps(GOOD),
        "{not json",
        _with(op="x"),  # unknown op
        json.dumps({"value": GOOD["value"]}),  # no key, no key columns
        _with(after="a string"),  # wrong type
        _with(source={"connector": "sqlserver", "schema": "dbo", "table": "t", "commit_lsn": "zz"}),
        "[1, 2]",
        "",
        json.dumps({"key": {"id": 1}, "value": None}),  # tombstone: skipped, not quarantined
        json.dumps(GOOD),
    ]
    path = tmp_path / "landing.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = parse_file(str(path))
    assert len(result.events) == 2
    assert result.skipped == 1
    assert result.records == 9  # blank lines are not records
    reasons = {q.line: q.reason for q in result.quarantined}
    assert set(reasons) == {2, 3, 4, 5, 6, 7}
    assert reasons[2].startswith("not valid JSON")
    assert reasons[3] == "unknown op 'x'"
    assert reasons[4].startswith("missing key for s.t")
    assert reasons[5] == "after is not an object: str"
    assert "commit_lsn is not of the form" in reasons[6]
    assert reasons[7] == "a record must be a JSON object, not list"
    assert all(q.file == str(path) for q in result.quarantined)
    assert result.quarantined[0].record == "{not json"
