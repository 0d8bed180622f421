"""Turning files of change events into the typed event log (``cdc-backfill ingest``)."""
