"""A real Spark standalone cluster for the tests: a master and its workers started by pyspark's own
launcher (``bin/spark-class``; the pip pyspark has no ``sbin/start-*.sh``), each a process of its own on
127.0.0.1 with its own working folder, so that a job submitted to it runs in executors that are not the
driver's JVM and see no file of the driver's but what the job ships or reads from shared storage."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.s3 import free_port


@dataclass
class StandaloneCluster:
    """A master and ``workers`` workers (1 core, ``memory`` each) whose logs and work dirs lie in
    ``folder``. ``env`` is added to the daemons' environment (the S3 settings: executors reach the lake
    with what the driver's conf carries, but the daemons get them too, as a cluster's hosts would)."""

    folder: Path
    env: dict[str, str] = field(default_factory=dict)
    workers: int = 2
    memory: str = "1g"
    port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    work_dirs: list[Path] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def status(self) -> dict[str, Any]:
        """The master's view of the cluster (its web UI's JSON): workers, active and completed apps."""
        url = f"http://127.0.0.1:{self.ui_port}/json/"
        with urllib.request.urlopen(url, timeout=10) as answer:
            return dict(json.loads(answer.read()))

    def start(self, timeout: float = 120) -> StandaloneCluster:
        """Start the daemons and wait until the master counts every worker ALIVE (RuntimeError with
        the logs' tails if not within ``timeout``: the machine may be busy, so be generous)."""
        from cdc_backfill.runtime import apply_defaults, spark_home

        apply_defaults()  # JAVA_HOME (a Java 17+ wherever it was found) and SPARK_HOME, as the CLI gets
        home = spark_home()
        if home is None:
            raise RuntimeError("pyspark is not installed")
        spark_class = str(home / "bin" / "spark-class")
        # SPARK_LOCAL_IP: every daemon (and the executors they fork) binds to the loopback address only
        env = {**os.environ, **self.env, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(home)}
        self.folder.mkdir(parents=True, exist_ok=True)
        self._launch(
            "master", env,
            [spark_class, "org.apache.spark.deploy.master.Master", "-h", "127.0.0.1",
             "--port", str(self.port), "--webui-port", str(self.ui_port)],
        )  # fmt: skip
        for n in range(1, self.workers + 1):
            work = self.folder / f"worker-{n}"
            work.mkdir()  # empty: what appears in it afterwards is what the executors wrote
            self.work_dirs.append(work)
            self._launch(
                f"worker-{n}", env,
                [spark_class, "org.apache.spark.deploy.worker.Worker", "-h", "127.0.0.1",
                 "--webui-port", str(free_port()), "--cores", "1", "--memory", self.memory,
                 "--work-dir", str(work), self.master_url],
            )  # fmt: skip
        self._wait_alive(timeout)
        return self

    def _launch(self, name: str, env: dict[str, str], cmd: list[str]) -> None:
        log = self.folder / f"{name}.log"
        self.logs.append(log)
        with log.open("wb") as out:
            self.procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env))

    def _wait_alive(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        seen = "no answer"
        while time.monotonic() < deadline:
            dead = [(p.args, p.returncode) for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"a daemon exited: {dead}\n{self.tails()}")
            try:
                alive = [w for w in self.status().get("workers", []) if w.get("state") == "ALIVE"]
                if len(alive) >= self.workers:
                    return
                seen = f"{len(alive)} worker(s) ALIVE"
            except (OSError, ValueError) as exc:  # the master's UI is not up yet
                seen = str(exc)
            time.sleep(0.5)
        raise RuntimeError(
            f"the cluster was not up in {timeout:.0f} s ({seen}; want {self.workers} workers)\n{self.tails()}"
        )

    def tails(self, chars: int = 1500) -> str:
        return "\n".join(f"--- {log.name}:\n{log.read_text(errors='replace')[-chars:]}" for log in self.logs)

    def stop(self) -> None:
        """Stop every daemon (workers first, then the master); a worker stops its executors itself."""
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
