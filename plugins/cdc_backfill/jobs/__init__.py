"""The Spark jobs' entry points, which ``spark-submit`` runs as scripts: each parses its arguments,
builds the session and calls the package. They live in the package so that an installed package runs
them (``cdc_backfill.spark.submit`` names their files); ``spark_jobs/`` of a checkout holds thin files
that call the same ``main``."""
