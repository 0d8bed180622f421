"""One pgoutput TupleData to a CSV line of its text values (``pg.csvtext`` reads it into lake types):
what the capture lands into the typed event log. The columns the server did not send (an unchanged
TOAST value, kind ``u``) come back by index: their field is empty and their value stays.

``tuple_csv(buf, pos, key_idx=()) -> (CSV line, indexes of unchanged columns, the fields at key_idx,
position after the tuple)``: the capture's hot path, in C (``_speedups.c``, built when the package is
installed). An unknown kind or a truncated tuple is a ``ValueError``."""

from __future__ import annotations

from cdc_backfill.pg._speedups import tuple_csv

__all__ = ["tuple_csv"]
