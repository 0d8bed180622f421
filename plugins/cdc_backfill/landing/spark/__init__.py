"""The Spark side of the landing: DataFrame -> DataFrame transforms, and the job that reads and writes
(only modules in a folder named ``spark`` import pyspark)."""
