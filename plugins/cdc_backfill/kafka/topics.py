"""What a broker holds: the topics a pattern matches, their partitions and each partition's offsets.

The driver asks these before Spark reads anything, so that a broker that is down, a pattern that
matches nothing and offsets that retention deleted are refused in one line, with nothing landed. The
records themselves are read by Spark's Kafka source (``ingest.spark.capture_kafka``); this client only plans.

Client settings are written as Kafka's Java clients name them (``security.protocol``,
``sasl.mechanism``, ...), the names users know from Kafka Connect and Spark's ``kafka.`` options;
:func:`client_config` passes the ones librdkafka names alike. Their values are never printed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

# Topics Kafka itself and Kafka Connect keep: never change events, whatever the pattern says.
INTERNAL = re.compile(r"^(__consumer_offsets|__transaction_state|__share_group_state|_schemas)$")
# Settings librdkafka takes under the same name as Kafka's Java client.
SAME_NAME = (
    "security.protocol",
    "sasl.mechanism",
    "sasl.username",
    "sasl.password",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "client.id",
)
TIMEOUT_S = 10.0
# How long a reader or a wait tries again while the broker does not answer: a restart's length
BROKER_PATIENCE_S = 300.0
# The broker's client settings for a job (JSON): not on its command line, where ``ps`` shows them
PROPERTIES_ENV = "CDC_BACKFILL_KAFKA_PROPERTIES"


class KafkaError(RuntimeError):
    """The broker cannot be read as asked: the message says what and what to do."""


class ReadFailed(KafkaError):
    """Spark's read of the topics failed (:func:`read_failure` says it in one line); nothing landed."""


class BrokerUnavailable(KafkaError):
    """The broker did not answer: a restart may end it (``--follow`` tries again)."""


@dataclass(frozen=True)
class Broker:
    """Where the topics are and how to connect (``properties``: Java client names, secrets included:
    never printed, see :meth:`__repr__`)."""

    bootstrap: str
    properties: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Broker({self.bootstrap!r}, properties={sorted(self.properties)})"

    @classmethod
    def from_environ(cls, bootstrap: str, environ: Mapping[str, str] | None = None) -> Broker:
        """The broker at ``bootstrap`` with the settings a caller passed in :data:`PROPERTIES_ENV`."""
        text = (os.environ if environ is None else environ).get(PROPERTIES_ENV) or "{}"
        try:
            properties = json.loads(text)
        except ValueError:
            raise KafkaError(f"{PROPERTIES_ENV} is not a JSON object of Kafka client settings") from None
        if not isinstance(properties, dict):
            raise KafkaError(f"{PROPERTIES_ENV} is not a JSON object of Kafka client settings")
        return cls(bootstrap, {str(k): str(v) for k, v in properties.items()})

    @classmethod
    def from_client_config(cls, config: Mapping[str, object], where: str) -> Broker:
        """The broker of a librdkafka configuration (an Airflow connection of the Kafka provider's type
        keeps one in its extra), its settings named as Java clients (Spark's Kafka source) take them:
        ``sasl.username``/``sasl.password`` become a JAAS login, ``ssl.ca.location`` a PEM trust store,
        the rest passes as it is. ``where`` names the configuration in the error when it has no
        ``bootstrap.servers``."""
        settings = {str(k): str(v) for k, v in config.items() if v is not None}
        bootstrap = settings.pop("bootstrap.servers", "").strip()
        if not bootstrap:
            raise KafkaError(f'{where} has no "bootstrap.servers": add it, as HOST:PORT[,HOST:PORT]')
        user, password = settings.pop("sasl.username", None), settings.pop("sasl.password", None)
        if user is not None and "sasl.jaas.config" not in settings:
            module = _LOGIN_MODULES.get(settings.get("sasl.mechanism", "PLAIN").upper())
            if module is None:
                raise KafkaError(
                    f"{where}: sasl.mechanism {settings['sasl.mechanism']} with sasl.username is not one "
                    f"of {', '.join(_LOGIN_MODULES)}: give Java's sasl.jaas.config instead"
                )
            quoted = [(v or "").replace("\\", "\\\\").replace('"', '\\"') for v in (user, password)]
            settings["sasl.jaas.config"] = f'{module} required username="{quoted[0]}" password="{quoted[1]}";'
        ca = settings.pop("ssl.ca.location", None)
        if ca is not None:
            settings.setdefault("ssl.truststore.type", "PEM")
            settings.setdefault("ssl.truststore.location", ca)
        if settings.get("ssl.endpoint.identification.algorithm") == "none":
            settings["ssl.endpoint.identification.algorithm"] = ""  # Java's word for no check
        for name in _CONSUMER_ONLY:
            settings.pop(name, None)
        return cls(bootstrap, settings)

    def environ(self) -> dict[str, str]:
        """What :meth:`from_environ` reads back: the settings for a job's environment."""
        return {PROPERTIES_ENV: json.dumps(dict(self.properties))} if self.properties else {}

    def spark_options(self) -> dict[str, str]:
        """The Kafka source's options for this broker (Spark passes ``kafka.``-prefixed ones to the
        client)."""
        return {
            "kafka.bootstrap.servers": self.bootstrap,
            **{f"kafka.{k}": v for k, v in self.properties.items()},
        }


@dataclass(frozen=True)
class Partition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]"


# Java's login module for each SASL mechanism a user name and password log in with
_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
# A consumer's own settings in a connection made for other uses: the readers here set their own
_CONSUMER_ONLY = ("group.id", "auto.offset.reset", "enable.auto.commit")

# The user name and password of a JAAS login (PLAIN, SCRAM), as Java clients take them: librdkafka takes
# them as sasl.username and sasl.password
_JAAS = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')


def client_config(broker: Broker) -> dict[str, str]:
    """librdkafka's settings for ``broker`` (pure)."""
    # librdkafka writes each failed connection to stderr itself: the error this module raises says it once
    config = {"bootstrap.servers": broker.bootstrap, "log_level": "2"}
    config.update({k: v for k, v in broker.properties.items() if k in SAME_NAME})
    for name, value in _JAAS.findall(broker.properties.get("sasl.jaas.config", "")):
        config.setdefault(f"sasl.{name}", value.replace('\\"', '"').replace("\\\\", "\\"))
    if broker.properties.get("ssl.truststore.type", "").upper() == "PEM":
        config.setdefault("ssl.ca.location", broker.properties.get("ssl.truststore.location", ""))
    if config.get("ssl.endpoint.identification.algorithm") == "":
        config["ssl.endpoint.identification.algorithm"] = "none"
    return config


def matching(names: list[str], pattern: str) -> list[str]:
    """The topic names the whole of ``pattern`` matches, Kafka's internal topics left out (pure)."""
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise KafkaError(f"--topics {pattern!r} is not a regular expression: {exc}") from None
    return sorted(n for n in names if rx.fullmatch(n) and not INTERNAL.match(n))


def partitions(broker: Broker, pattern: str) -> list[Partition]:
    """Every partition of the topics ``pattern`` matches; KafkaError when the broker cannot be reached
    or no topic matches."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**client_config(broker), "socket.connection.setup.timeout.ms": "5000"})
    try:
        meta = admin.list_topics(timeout=TIMEOUT_S)
    except KafkaException as exc:
        raise BrokerUnavailable(
            f"cannot reach the Kafka broker at {broker.bootstrap} ({_reason(exc)}): "
            "check --bootstrap-servers and that the broker is up"
        ) from None
    topics = matching(list(meta.topics), pattern)
    if not topics:
        raise KafkaError(
            f"no topic at {broker.bootstrap} matches --topics {pattern!r} "
            f"(it has {len(meta.topics)} topic(s)): give a regular expression matching whole topic names"
        )
    return [Partition(t, p) for t in topics for p in sorted(meta.topics[t].partitions)]


def offsets(broker: Broker, parts: list[Partition]) -> dict[Partition, tuple[int, int]]:
    """Each partition's (earliest, end) offsets: what retention has kept, and one past the last record
    written. KafkaError when the broker cannot answer."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer(
        {**client_config(broker), "group.id": "cdc-backfill-plan", "enable.auto.commit": False}
    )
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(p.topic, p.partition), timeout=TIMEOUT_S)
            for p in parts
        }
    except KafkaException as exc:
        raise BrokerUnavailable(
            f"the Kafka broker at {broker.bootstrap} did not give the offsets of {len(parts)} partition(s) "
            f"({_reason(exc)}): check that it is up"
        ) from None
    finally:
        consumer.close()


def _reason(exc: Exception) -> str:
    """librdkafka's error in one line, without its code's prefix."""
    err = exc.args[0] if exc.args else exc
    text = err.str() if hasattr(err, "str") else str(err)
    return text.strip().rstrip(".")


def read_failure(exc: BaseException, broker: Broker) -> str:
    """A failed read of the topics in one line (the JVM's error's first line, its class names left
    out), and what to do: nothing landed, so running it again reads the same records."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for prefix in ("An error occurred while calling", "py4j.protocol.Py4JJavaError:"):
        if text.startswith(prefix):
            lines = [line for line in str(exc).splitlines() if "Exception:" in line]
            text = lines[0].split("Exception:", 1)[1].strip() if lines else text
    return (
        f"the read from the Kafka broker at {broker.bootstrap} failed, nothing landed ({text[:300]}): "
        "check that the broker is up, then run this again (it reads the same offsets)"
    )
