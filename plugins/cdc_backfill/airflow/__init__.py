"""Airflow-facing parts, shaped like a provider: hooks own connections, operators own orchestration.

Only modules under this package import Airflow.
"""
