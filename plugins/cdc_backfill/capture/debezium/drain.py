"""The end of a drain of Debezium's stream: a logical decoding message written into the source (a
PostgreSQL one: :func:`pg_marker_writer`), recognised in what Debezium delivers, record by record or in a
batch file's bytes."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

from cdc_backfill.signals.marks import DRAIN_PREFIX


def drain_marker_in(data: bytes, marker: str) -> bool:
    """Does a batch file's bytes hold the drain marker (pure)? Only lines naming its prefix are read."""
    if DRAIN_PREFIX.encode() not in data:
        return False
    for line in data.splitlines():
        if DRAIN_PREFIX.encode() in line and is_drain_marker(
            json.dumps(json.loads(line).get("value")), marker
        ):
            return True
    return False


def is_drain_marker(value: str | None, marker: str) -> bool:
    """Is this record the drain's logical decoding message (pure)? Debezium writes its content as
    base64."""
    if not value or DRAIN_PREFIX not in value:
        return False
    doc = json.loads(value)
    payload = (doc.get("payload", doc) if isinstance(doc, dict) else None) or {}
    message = payload.get("message") or {}
    if payload.get("op") != "m" or message.get("prefix") != DRAIN_PREFIX:
        return False
    try:
        return base64.b64decode(message.get("content") or "").decode() == marker
    except ValueError:
        return False


def pg_marker_writer(url: str) -> Callable[[str, str], None]:
    """Writes the drain's logical decoding message into a PostgreSQL source."""
    import sqlalchemy as sa

    from cdc_backfill.config import source_engine

    sa_engine = source_engine(url)

    def emit(prefix: str, content: str) -> None:
        with sa_engine.begin() as conn:
            # Not transactional, as the native capture's drain marker: decoded at its own position,
            # after every transaction that committed before it
            conn.execute(
                sa.text("SELECT pg_logical_emit_message(false, :p, :c)"), {"p": prefix, "c": content}
            )

    return emit
