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
