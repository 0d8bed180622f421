"""A single-node Kafka broker (KRaft: broker and controller in one JVM) on 127.0.0.1, from Maven
Central's jars (``kafka.jars``), for the demo and the tests. A restart on the same folder and ports keeps
its records, so a test can kill it and start it again.
"""

from __future__ import annotations

import base64
import logging
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from cdc_backfill.kafka.jars import jars
from cdc_backfill.kafka.process import (
    JavaProcess,
    KafkaLocalError,
    free_port,
    java_command,
    log4j_config,
    tail,
    write_properties,
)

log = logging.getLogger(__name__)

BROKER_HEAP = "-Xmx512m"


def cluster_id() -> str:
    """A KRaft cluster id: a UUID as 22 characters of URL-safe base64. One that starts with ``-`` is
    drawn again: StorageTool would read it as an option."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class LocalKafka(JavaProcess):
    """A single-node KRaft broker (broker and controller in one JVM) on 127.0.0.1.

    ``with LocalKafka() as kafka: kafka.bootstrap`` starts it in a temporary folder and removes it after;
    give ``folder`` to keep the data. The ports are chosen once, so :meth:`start` after :meth:`stop` or
    :meth:`kill` serves the same records on the same address: clients need no new bootstrap."""

    what = "Kafka broker"

    def __init__(
        self,
        folder: Path | None = None,
        *,
        port: int | None = None,
        controller_port: int | None = None,
        partitions: int = 1,
        java_options: Sequence[str] = (BROKER_HEAP,),
        extra: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(folder, "cdc-kafka-")
        self.port = port or free_port()
        self.controller_port = controller_port or free_port()
        self.partitions = partitions
        self.java_options = list(java_options)
        self.extra = dict(extra or {})
        self.data_dir = self.folder / "data"
        self.properties_file = self.folder / "server.properties"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def properties(self) -> dict[str, str]:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            "num.partitions": str(self.partitions),
            "auto.create.topics.enable": "true",  # Connect's topics (one per table) appear on first use
            # one node: every internal topic with one replica, or they are never created
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",  # 50 by default: a first consumer group waits on them
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # After a kill the restarted broker cannot register until the controller has fenced its
            # previous life: that waits out the session (9 s by default, 2 s heartbeats).
            "broker.heartbeat.interval.ms": "1000",
            "broker.session.timeout.ms": "5000",
        }
        props.update(self.extra)
        return props

    def _java(self, main: str, *args: str) -> list[str]:
        log4j = self.folder / "log4j2.properties"
        return [
            java_command(), *self.java_options, f"-Dlog4j2.configurationFile={log4j}",
            "-cp", str(jars("broker") / "*"), main, *args,
        ]  # fmt: skip

    def _format(self) -> None:
        """Format the storage once; a folder formatted before keeps its data (a restart)."""
        if (self.data_dir / "meta.properties").is_file():
            return
        cmd = self._java(
            "kafka.tools.StorageTool", "format", "--standalone", f"--cluster-id={cluster_id()}",
            "-c", str(self.properties_file),
        )  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=self.folder, check=False)
        if done.returncode != 0:
            raise KafkaLocalError(
                f"formatting the Kafka broker's storage in {self.data_dir} failed (exit {done.returncode})"
                f"\n--- StorageTool's output ---\n{tail(done.stdout + done.stderr, 25)}"
            )

    def start(self, timeout: float = 120.0) -> LocalKafka:
        """Start (formatting the storage the first time) and wait until the broker answers a metadata
        request listing itself; raises KafkaLocalError with the log's tail if it does not."""
        jars("broker")  # fetched before the clock of the start runs
        write_properties(self.properties_file, self.properties())
        log4j_config(self.folder / "log4j2.properties", ["kafka.log", "org.apache.kafka.storage"])
        self._format()
        self._launch(self._java("kafka.Kafka", str(self.properties_file)))
        deadline = self.started_at + timeout
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise self._failed(f"the Kafka broker exited at start (exit {self.proc.returncode})")
            if broker_ready("127.0.0.1", self.port):
                break
            if time.monotonic() > deadline:
                raise self._failed(f"the Kafka broker did not answer on {self.bootstrap} in {timeout:.0f} s")
            time.sleep(0.2)
        self.ready_seconds = time.monotonic() - self.started_at
        log.info("Kafka broker on %s ready in %.1f s", self.bootstrap, self.ready_seconds)
        return self

    def __enter__(self) -> LocalKafka:
        return self.start()


def broker_ready(host: str, port: int, timeout: float = 2.0) -> bool:
    """The broker answers a metadata request that lists a broker on this port: a listening socket alone
    comes before the broker has joined its own cluster."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": f"{host}:{port}", "log_level": "0",
                         "socket.connection.setup.timeout.ms": str(max(1000, int(timeout * 1000)))})  # fmt: skip
    try:
        meta = admin.list_topics(timeout=timeout)
    except KafkaException:
        return False
    return any(b.port == port for b in meta.brokers.values())
