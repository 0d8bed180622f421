"""The typed event log (docs/design.md §5.0): each collection's change events, parsed once at the edge where
their types are known, as Parquet files in the collection's own column types."""
