# The official Airflow image with cdc_backfill installed as a user installs it: the package with its
# extras from this checkout (the versions constraints.txt pins), which makes it a provider and registers
# its plugin (no plugins folder); Java 17 for Spark, and a C compiler for the package's two C parts.
FROM apache/airflow:3.3.2-python3.11
USER root
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
USER airflow
COPY --chown=airflow . /tmp/cdc-backfill
RUN pip install --no-cache-dir "/tmp/cdc-backfill[airflow,kafka,debezium,s3,sqlserver]" \
        -c /tmp/cdc-backfill/constraints.txt \
    && rm -rf /tmp/cdc-backfill
