"""Spark's runtime: the session, spark-submit's command lines, log4j, column types and positions on Spark.
What a concept does on Spark lives in that concept's own ``spark/`` folder (``reconcile/spark``,
``verify/spark``, ``ingest/spark``, ``eventlog/spark``); only modules in a folder named ``spark`` import
pyspark (tests/test_layout.py)."""
