"""The drain's end marker as Debezium delivers it: a logical decoding message whose content is base64,
recognised in one record's value and in a batch file's bytes; other messages and other markers are not."""

from __future__ import annotations

import base64
import json

from cdc_backfill.capture.debezium.drain import drain_marker_in, is_drain_marker
from cdc_backfill.signals.marks import DRAIN_PREFIX


def _message(prefix: str, content: str) -> dict:
    text = base64.b64encode(content.encode()).decode()
    return {"schema": {}, "payload": {"op": "m", "message": {"prefix": prefix, "content": text}}}


def test_the_marker_in_a_value_and_in_a_batch_file() -> None:
    mine, other = _message(DRAIN_PREFIX, "m-1"), _message(DRAIN_PREFIX, "m-0")
    assert is_drain_marker(json.dumps(mine), "m-1")
    assert not is_drain_marker(json.dumps(other), "m-1")
    assert not is_drain_marker(json.dumps(_message("app", "m-1")), "m-1")
    assert not is_drain_marker(None, "m-1")
    lines = [
        {"partition": 0, "offset": i, "key": None, "value": v} for i, v in enumerate((other, None, mine))
    ]
    data = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines).encode()
    assert drain_marker_in(data, "m-1")
    assert not drain_marker_in(data, "m-2")
    assert not drain_marker_in(b'{"offset":0,"value":null}\n', "m-1")
