"""PostgreSQL below everything else: connection options, the catalog reader, pgoutput decoding, value
encoding, the embedded server and the source checks."""
