"""PostgreSQL-specific parts: the embedded server, and (later) capture through pgoutput."""
