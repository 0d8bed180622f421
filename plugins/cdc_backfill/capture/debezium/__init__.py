"""``capture debezium``: Debezium's embedded engine landing its records as batch files."""
