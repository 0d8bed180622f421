"""Kafka's and Debezium's jars by Maven coordinates (``cdc_backfill.kafka.jars``), without Maven Central:
what a missing Maven or a failed fetch says, and two callers at once fetching once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from cdc_backfill.kafka.jars import jars
from cdc_backfill.kafka.process import KafkaLocalError


def _fake_mvn(bin_dir: Path, body: str) -> Path:
    """An ``mvn`` on PATH that runs ``body`` (sh) with $out set to its -DoutputDirectory."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "mvn"
    script.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do case "$a" in -DoutputDirectory=*) out="${a#-DoutputDirectory=}";; esac; done\n'
        + body
        + "\n"
    )
    script.chmod(0o755)
    return script


def test_jars_without_maven_say_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(KafkaLocalError) as err:
        jars("broker", cache=tmp_path / "cache")
    assert "\n" not in str(err.value) and "`mvn` is not on PATH" in str(err.value)
    assert "apt-get install maven" in str(err.value)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [".fetch.lock"]  # nothing half made


def test_a_failed_fetch_carries_the_tail_of_mavens_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_mvn(tmp_path / "bin", 'echo "[ERROR] Could not resolve dependencies: 404 Not Found"; exit 1')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    with pytest.raises(KafkaLocalError) as err:
        jars("connect", cache=tmp_path / "cache")
    headline, *tail = str(err.value).splitlines()
    assert "with Maven failed (exit 1)" in headline and "Maven Central is reachable" in headline
    assert "[ERROR] Could not resolve dependencies: 404 Not Found" in tail
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [".fetch.lock"]


def test_two_callers_at_once_fetch_once_and_see_the_folder_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = tmp_path / "calls"
    _fake_mvn(tmp_path / "bin", f'echo run >> {calls}; mkdir -p "$out"; sleep 0.5; echo jar > "$out/a-1.jar"')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    found: list[Path] = []
    threads = [
        threading.Thread(target=lambda: found.append(jars("broker", cache=tmp_path / "cache")))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls.read_text().splitlines() == ["run"]
    assert len(set(found)) == 1 and len(found) == 3
    folder = found[0]
    assert folder.name.startswith("broker-") and (folder / "a-1.jar").is_file()
    assert "org.apache.kafka:kafka_2.13:" in (folder / "COORDINATES.txt").read_text()
    assert sorted(p.name for p in folder.parent.iterdir()) == [".fetch.lock", folder.name]
