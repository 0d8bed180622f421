"""What the stream carries besides the changes (pure): the data of a chunk's watermark rows, the
native engine's start and done rows around one collection of a snapshot (docs/design.md §6 rule 7),
written into the signal table like the watermarks, so that the stream tells the reconcile where the
snapshot started (its P0) and that it finished, and the prefixes of the captures' drain and fence
messages. The ids and types of the signal rows are in ``signals.model``.

- ``<uuid>-start``, type ``snapshot-collection-start``: committed before the engine fixes the
  collection's largest key.
- ``<uuid>-done``, type ``snapshot-collection-done``: committed after every chunk of the collection
  landed; names how many chunk files landed and the snapshot's ``additional-condition``. A stopped or
  failed snapshot never writes it.

Both carry ``data-collection`` and ``signal`` like the watermarks. Debezium ignores signal types it
does not know, so a shared signal table stays usable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdc_backfill.signals.model import DATA_MAX

START_SUFFIX = "-start"
DONE_SUFFIX = "-done"
ENDED_SUFFIX = "-ended"  # a collection's snapshot stopped or failed: it will never have a done row
K_STATUS = "status"
K_FOR = "data-collection"
K_SIGNAL = "signal"
K_CHUNKS = "chunks"
K_CONDITION = "additional-condition"
K_CONDITION_OMITTED = "additional-condition-omitted"  # too long for the signal table's data column
K_DIALECT = "dialect"  # the condition's SQL dialect (SQLAlchemy's name)


# Logical-decoding messages the captures write into the stream (PostgreSQL), beside the signal rows:
# a drain's end marker (every capture, native or Debezium: never landed as an event) and a fence
# (the landed position passes it: ``capture.fence``).
DRAIN_PREFIX = "cdc_backfill.drain"
FENCE_PREFIX = "cdc_backfill.fence"


def window_data(collection: str, signal: str) -> str:
    """The data of a chunk's two watermark rows (``signals.model.open_id`` / ``close_id``)."""
    return json.dumps({K_FOR: collection, K_SIGNAL: signal})


def start_data(collection: str, signal: str) -> str:
    return window_data(collection, signal)


def ended_data(collection: str, signal: str, status: str) -> str:
    """The data of the row that says a collection's snapshot ended without finishing (stopped, failed)."""
    return json.dumps({K_FOR: collection, K_SIGNAL: signal, K_STATUS: status})


def done_data(collection: str, signal: str, chunks: int, condition: str | None, dialect: str) -> str:
    """The done row's data; a condition too long for the data column is left out and said so (the
    reconcile then removes nothing: it cannot know which rows the snapshot covered)."""
    doc: dict[str, Any] = {K_FOR: collection, K_SIGNAL: signal, K_CHUNKS: chunks, K_DIALECT: dialect}
    if condition is not None:
        doc[K_CONDITION] = condition
    text = json.dumps(doc)
    if len(text) > DATA_MAX:
        doc.pop(K_CONDITION)
        doc[K_CONDITION_OMITTED] = True
        text = json.dumps(doc)
    return text


@dataclass(frozen=True)
class Mark:
    """A start or done row of one snapshot of a collection, as the stream carried it."""

    kind: str  # "start", "done" or "ended" (stopped or failed: no done row will come)
    signal: str
    position: tuple[int, ...]
    data: Mapping[str, Any]


def mark_of(row_id: str, data: Mapping[str, Any], position: tuple[int, ...]) -> Mark | None:
    """A start or done row from a signal row's id and parsed data; None for any other row."""
    signal = data.get(K_SIGNAL)
    if not isinstance(signal, str):
        return None
    if row_id.endswith(START_SUFFIX):
        return Mark("start", signal, position, data)
    if row_id.endswith(DONE_SUFFIX):
        return Mark("done", signal, position, data)
    if row_id.endswith(ENDED_SUFFIX):
        return Mark("ended", signal, position, data)
    return None
