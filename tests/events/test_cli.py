"""`cdc-backfill events parse`: events on stdout, quarantined records on stderr, exit 1 if any."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.paths import FIXTURES


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cdc_backfill.cli", "events", "parse", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_parse_prints_canonical_events() -> None:
    res = run(str(FIXTURES / "debezium_sqlserver_customers.json"))
    assert res.returncode == 0, res.stderr
    events = [json.loads(line) for line in res.stdout.splitlines()]
    assert [e["op"] for e in events] == ["c", "u", "d"]
    first = events[0]
    assert set(first) == {
        "collection",
        "op",
        "key",
        "before",
        "after",
        "unchanged",
        "position",
        "source_ts_ms",
        "snapshot",
    }
    assert first["position"] == [
        0x00000027_00000758_0005,
        0x00000027_00000758_0003,
        1,
    ]  # beyond 53 bits, exact
    assert res.stderr.strip().endswith("3 events, 0 records quarantined")


def test_quarantined_records_go_to_stderr_with_exit_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": {"id": 1}, "value": {"op": "z"}}\n')
    res = run(str(bad), str(FIXTURES / "dataworks_kafka_no_pk.json"))
    assert res.returncode == 1
    assert len(res.stdout.splitlines()) == 6
    [quarantined, summary] = res.stderr.strip().splitlines()
    q = json.loads(quarantined)["quarantined"]
    assert (q["reason"], q["file"], q["line"]) == ("unknown op 'z'", str(bad), 1)
    assert summary == "6 events, 1 records quarantined"


def test_collection_and_key_columns_options(tmp_path: Path) -> None:
    value_only = tmp_path / "v.jsonl"
    value_only.write_text(
        json.dumps(
            {
                "before": None,
                "after": {"ID": 7, "N": "x"},
                "op": "c",
                "source": {"connector": "oracle", "scn": "5"},
            }
        )
        + "\n"
    )
    res = run("--collection", "APP.T", "--key-columns", "APP.T=ID", str(value_only))
    assert res.returncode == 0, res.stderr
    [event] = [json.loads(line) for line in res.stdout.splitlines()]
    assert (event["collection"], event["key"], event["position"]) == ("APP.T", {"ID": 7}, [5, 5])
    bad = run("--key-columns", "no-equals-sign", str(value_only))
    assert bad.returncode != 0
    assert "COLLECTION=col1,col2" in bad.stderr
