"""The state's Spark half: a version read as a DataFrame, a DataFrame written as the next version."""
