"""Kafka: a local broker and a Kafka Connect worker running Debezium, from Maven Central's jars."""
