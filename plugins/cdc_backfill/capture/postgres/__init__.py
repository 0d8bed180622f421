"""The PostgreSQL capture: pgoutput from a replication slot into the typed event log."""
