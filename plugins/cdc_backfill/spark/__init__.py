"""Spark-facing parts. Only modules under this package import pyspark."""
