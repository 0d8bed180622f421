# Airflow with this project's package and pins (the same requirements and constraints as `make venv`).
FROM apache/airflow:3.3.2-python3.11
USER root
RUN apt-get update && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
USER airflow
COPY --chown=airflow requirements.txt constraints.txt pyproject.toml /opt/cdc/
COPY --chown=airflow plugins /opt/cdc/plugins
RUN pip install --no-cache-dir -r /opt/cdc/requirements.txt -c /opt/cdc/constraints.txt \
    && pip install --no-cache-dir --no-deps -e /opt/cdc
