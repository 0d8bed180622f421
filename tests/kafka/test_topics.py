"""The broker's settings and topic names (pure): secrets never printed, internal topics never read."""

from __future__ import annotations

import pytest

from cdc_backfill.kafka.topics import (
    PROPERTIES_ENV,
    Broker,
    KafkaError,
    client_config,
    matching,
    read_failure,
)


def test_the_pattern_matches_whole_names_and_never_kafkas_own_topics() -> None:
    names = ["cdc.public.orders", "cdc.public.orders_archive", "__consumer_offsets", "xcdc.public.t"]
    assert matching(names, r"cdc\.public\.orders") == ["cdc.public.orders"]
    assert matching(names, r".*") == ["cdc.public.orders", "cdc.public.orders_archive", "xcdc.public.t"]


def test_a_pattern_that_is_no_regex_is_refused_in_one_line() -> None:
    with pytest.raises(KafkaError, match=r"--topics 'cdc\.\(' is not a regular expression"):
        matching(["a"], r"cdc.(")


def test_settings_travel_to_both_clients_and_are_never_printed() -> None:
    broker = Broker(
        "b:9092", {"security.protocol": "SASL_SSL", "sasl.password": "s3cret", "sasl.jaas.config": "x"}
    )
    assert "s3cret" not in repr(broker) and "s3cret" not in str(broker)
    assert broker.spark_options()["kafka.sasl.password"] == "s3cret"
    assert client_config(broker) == {
        "bootstrap.servers": "b:9092",
        "log_level": "2",
        "security.protocol": "SASL_SSL",
        "sasl.password": "s3cret",
    }
    assert Broker.from_environ("b:9092", broker.environ()) == broker


def test_settings_that_are_no_json_object_are_refused() -> None:
    with pytest.raises(KafkaError, match=PROPERTIES_ENV):
        Broker.from_environ("b:9092", {PROPERTIES_ENV: "[1]"})


def test_a_failed_read_is_one_line_without_the_jvms_trace() -> None:
    exc = RuntimeError(
        "An error occurred while calling o123.save.\n: org.apache.kafka.common.errors.TimeoutException: "
        "Timed out waiting for a node assignment.\n\tat org.apache.kafka..."
    )
    line = read_failure(exc, Broker("127.0.0.1:1"))
    assert "\n" not in line and "Timed out waiting for a node assignment" in line and "o123" not in line


def test_a_jaas_login_reaches_the_planner_as_librdkafkas_user_and_password() -> None:
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="p\\"w";'
    config = client_config(Broker("b:9092", {"sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas}))
    assert config["sasl.username"] == "app" and config["sasl.password"] == 'p"w'
    assert config["sasl.mechanism"] == "SCRAM-SHA-512" and "sasl.jaas.config" not in config


def test_an_airflow_kafka_connection_reaches_spark_as_java_settings_and_librdkafka_unchanged() -> None:
    extra = {
        "bootstrap.servers": "b1:9093,b2:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "app", "sasl.password": 'p"w\\x', "ssl.ca.location": "/etc/ca.pem",
        "ssl.endpoint.identification.algorithm": "none", "group.id": "someone-elses",
    }  # fmt: skip
    broker = Broker.from_client_config(extra, "the Airflow connection 'k'")
    assert broker.bootstrap == "b1:9093,b2:9093"
    spark = broker.spark_options()
    assert spark["kafka.sasl.jaas.config"] == (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="p\\"w\\\\x";'
    )
    assert (
        spark["kafka.ssl.truststore.type"] == "PEM"
        and spark["kafka.ssl.truststore.location"] == "/etc/ca.pem"
    )
    assert spark["kafka.ssl.endpoint.identification.algorithm"] == ""
    assert not {"kafka.sasl.username", "kafka.sasl.password", "kafka.group.id"} & set(spark)
    # and back to librdkafka for the planner: what the connection said
    config = client_config(broker)
    assert {k: config[k] for k in extra if k != "group.id"} == {
        k: v for k, v in extra.items() if k != "group.id"
    }
    assert "app" not in repr(broker) and 'p"w' not in repr(broker)


def test_a_connection_without_bootstrap_servers_or_with_an_unknown_login_is_refused() -> None:
    with pytest.raises(KafkaError, match=r"the Airflow connection 'k' has no \"bootstrap.servers\": add it"):
        Broker.from_client_config({"security.protocol": "SSL"}, "the Airflow connection 'k'")
    with pytest.raises(KafkaError, match=r"sasl\.mechanism GSSAPI with sasl\.username is not one of PLAIN"):
        Broker.from_client_config(
            {"bootstrap.servers": "b:1", "sasl.mechanism": "GSSAPI", "sasl.username": "u"}, "the connection"
        )
