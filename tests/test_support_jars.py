"""The tests' S3 connector jars (``tests.support.jars``) when two test processes look for them at once, as
``make test``'s two processes do on a fresh machine: one fetch, and no jar seen half written."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tests.support.jars import MEMBERS, s3a_jars

WHOLE = b"PK" + b"x" * 1_000_000  # what each fake jar holds once written


def test_two_processes_at_once_fetch_the_jars_once_and_see_them_whole(tmp_path: Path) -> None:
    fetched = []

    def slow_fetch(into: Path) -> None:
        fetched.append(into)
        for name in MEMBERS:
            with (into / name).open("wb") as out:
                for i in range(0, len(WHOLE), 100_000):  # written in parts, slowly
                    out.write(WHOLE[i : i + 100_000])
                    out.flush()
                    time.sleep(0.01)

    seen: list[list[bytes]] = []

    def look() -> None:
        jars = s3a_jars(tmp_path, fetch=slow_fetch)
        seen.append([j.read_bytes() for j in jars])

    threads = [threading.Thread(target=look) for _ in range(3)]
    for t in threads:
        t.start()
        time.sleep(0.05)  # the later ones arrive while the first is writing
    for t in threads:
        t.join()
    assert len(fetched) == 1
    assert seen == [[WHOLE, WHOLE]] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*MEMBERS, ".fetch.lock"])


def test_jars_already_there_are_taken_without_a_fetch(tmp_path: Path) -> None:
    for name in MEMBERS:
        (tmp_path / name).write_bytes(WHOLE)

    def no_fetch(into: Path) -> None:
        raise AssertionError("fetched again")

    assert [j.name for j in s3a_jars(tmp_path, fetch=no_fetch)] == list(MEMBERS)
