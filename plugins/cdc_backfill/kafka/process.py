"""Local JVM processes for the demo and the tests (a Kafka broker, a Kafka Connect worker): each a
``java -cp 'DIR/*' ...`` in a folder of its own that holds its properties, its data and its log, in its
own process group, stopped when this Python process exits (``atexit``) so that a test run or a demo that
ends, however it ends short of SIGKILL, leaves no JVM behind. Importing this module starts nothing.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from cdc_backfill.runtime import find_java

log = logging.getLogger(__name__)


class KafkaLocalError(RuntimeError):
    """A jar fetch, a broker or a worker failed; the first line says what and what to do, the rest is
    the tail of the tool's output or the process's log."""


def tail(text: str, lines: int) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def java_command() -> str:
    """The ``java`` the project uses (``cdc_backfill.runtime.find_java``); raises when there is none."""
    info = find_java()
    if not info.ok or info.home is None:
        raise KafkaLocalError(
            f"Kafka needs Java 17 or newer and none was found ({info.detail}); install one "
            "(apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )
    return str(info.home / "bin" / "java")


_LIVE: set[subprocess.Popen[bytes]] = set()  # every JVM started here and not yet seen to end


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def end(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM to the process group, then SIGKILL after ``grace_s`` (0: SIGKILL at once)."""
    if proc.poll() is None:
        if grace_s > 0:
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                log.warning("process %s ignored SIGTERM for %.0f s: killed", proc.pid, grace_s)
        _signal_group(proc, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
    _LIVE.discard(proc)


@atexit.register
def _end_all() -> None:
    """No JVM outlives the Python process that started it (a graceful stop first: Connect then flushes
    its offsets)."""
    for proc in list(_LIVE):
        _signal_group(proc, signal.SIGTERM)
    give_up = time.monotonic() + 15
    for proc in list(_LIVE):
        end(proc, max(0.1, give_up - time.monotonic()))


class JavaProcess:
    """One JVM in a folder: its own process group, its output appended to ``log_file``."""

    what = "java process"

    def __init__(self, folder: Path | None, prefix: str) -> None:
        self._own_folder = folder is None
        self.folder = (Path(folder) if folder else Path(tempfile.mkdtemp(prefix=prefix))).resolve()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.log_file = self.folder / "process.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.ready_seconds: float | None = None  # from the JVM's start to ready, for the last start

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _launch(self, cmd: list[str]) -> None:
        if self.running:
            raise KafkaLocalError(f"{self.what} in {self.folder} is already running (pid {self.proc.pid})")  # type: ignore[union-attr]
        with self.log_file.open("ab") as out:
            out.write(f"\n=== start {time.strftime('%Y-%m-%d %H:%M:%S')}: {' '.join(cmd)}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.folder,
                start_new_session=True,
            )  # fmt: skip
        _LIVE.add(self.proc)
        self.started_at = time.monotonic()
        self.ready_seconds = None

    def logtail(self, lines: int = 40) -> str:
        try:
            return tail(self.log_file.read_text(errors="replace"), lines)
        except OSError:
            return "(no log)"

    def _failed(self, why: str) -> KafkaLocalError:
        """The error for a start that failed: the JVM is ended, the log's tail is in the message."""
        if self.proc is not None:
            end(self.proc, 5)
        return KafkaLocalError(f"{why}; see {self.log_file}\n--- log tail ---\n{self.logtail()}")

    def stop(self, grace_s: float = 30.0) -> None:
        """A graceful stop (SIGTERM, SIGKILL after ``grace_s``); the folder and its data stay."""
        if self.proc is not None:
            end(self.proc, grace_s)

    def kill(self) -> None:
        """SIGKILL, as a crash or a pulled plug would end it (fault tests); the folder stays."""
        if self.proc is not None:
            end(self.proc, 0)

    def close(self) -> None:
        """Stop, and remove the folder if it was a temporary one made here."""
        self.stop()
        if self._own_folder:
            shutil.rmtree(self.folder, ignore_errors=True)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def write_properties(path: Path, props: Mapping[str, str]) -> None:
    """A Java properties file; backslashes escaped (Java reads ``\\`` as an escape)."""
    lines = [f"{k}={str(v).replace(chr(92), chr(92) * 2)}" for k, v in props.items()]
    path.write_text("\n".join(lines) + "\n")


def log4j_config(path: Path, quiet: Sequence[str]) -> Path:
    """INFO to standard output (the process's log file); ``quiet`` loggers at WARN."""
    lines = [
        "status = warn",
        "appender.out.type = Console",
        "appender.out.name = out",
        "appender.out.layout.type = PatternLayout",
        "appender.out.layout.pattern = [%d] %p %m (%c)%n",
        "rootLogger.level = info",
        "rootLogger.appenderRef.out.ref = out",
    ]
    for i, name in enumerate(quiet):
        lines += [f"logger.q{i}.name = {name}", f"logger.q{i}.level = warn"]
    path.write_text("\n".join(lines) + "\n")
    return path
