"""What the PostgreSQL capture asks of the source besides the stream: the signal table, the publication
and the slot set up for a landing that is the slot's (``capture.binding``), and the catalog's word on a
relation (its column types and key, array element types)."""

from __future__ import annotations

import logging
from pathlib import Path

import sqlalchemy as sa

from cdc_backfill.capture.binding import (
    BINDING_TABLE,
    check_binding,
    check_slot_not_lost,
    forget_binding,
    record_binding,
)
from cdc_backfill.capture.postgres.changes import RelationSchema
from cdc_backfill.capture.publication import (
    choose_tables,
    ensure_publication,
    ensure_slot,
    list_tables,
    slot_exists,
)
from cdc_backfill.names import collection_name
from cdc_backfill.pg import pgoutput
from cdc_backfill.pg.catalog import primary_key_of, type_name
from cdc_backfill.signals.store import SignalStore
from cdc_backfill.signals.tables import PROGRESS_TABLE

log = logging.getLogger(__name__)


def set_up_source(
    sa_engine: sa.Engine, url: str, landing: Path, slot: str, publication: str, patterns: list[str] | None,
    signal_table: str | None,
) -> list[str]:  # fmt: skip
    """The signal table, the publication (the chosen tables and the signal table) and the slot, for a
    landing that is the slot's; returns warnings."""
    store = SignalStore(url, signal_table, sa_engine=sa_engine)
    store.init()
    with sa_engine.connect() as conn:
        # the project's own bookkeeping (signal statuses, snapshot progress) is not data to capture
        bookkeeping = set(store.protected[1:]) | {collection_name(store.schema or "public", PROGRESS_TABLE)}
        bookkeeping.add(collection_name(store.schema or "public", BINDING_TABLE))
        # the slot's landing first: a refused capture creates, streams and confirms nothing
        exists = slot_exists(conn, slot)
        check_slot_not_lost(landing, slot, exists)
        if not exists:
            forget_binding(conn, slot, store.schema)  # the name is free for this landing
        source = check_binding(conn, landing, slot, store.schema)
        tables = [t for t in list_tables(conn) if t.collection not in bookkeeping]
        chosen, warnings = choose_tables(tables, patterns, [store.signal_table])
        added = ensure_publication(conn, publication, chosen)
        created = ensure_slot(conn, slot)
        record_binding(conn, landing, slot, store.schema, source)
    for w in warnings:
        log.warning("%s", w)
    if added:
        log.info("publication %s: added %s", publication, ", ".join(added))
    if created:
        log.info("slot %s created", slot)
    return warnings


def relation_schema(conn: sa.Connection, rel: pgoutput.Relation) -> RelationSchema:
    """A relation message with its column types and key from the source's catalog: the key is the
    primary key, else the replica identity's columns."""
    names = [c.name for c in rel.columns]
    pk = primary_key_of(conn, rel.relid)
    types = [type_name(conn, c.type_oid, c.typmod) for c in rel.columns]
    key = list(pk) or [c.name for c in rel.columns if c.is_key]
    key_idx = tuple(names.index(k) for k in key if k in names)
    return RelationSchema(rel, collection_name(rel.namespace, rel.name), types, key, key_idx)
