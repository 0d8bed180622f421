"""A Debezium PostgreSQL key change (one WAL record delivered as a delete, a tombstone and a create with
the same ``lsn`` and ``txId``) lands like the native capture's: the delete at element 0 after a position,
the create at element 1 after the same position, so the reconcile pairs them (docs/design.md §6 rule 8)."""

from __future__ import annotations

import orjson

from cdc_backfill.events.parse import parse_lines

UNAVAILABLE = "__debezium_unavailable_value"


def _source(lsn: int, tx: int, sequence: list[str | None] | None = None) -> dict:
    source = {"connector": "postgresql", "schema": "public", "table": "docs", "lsn": lsn, "txId": tx}
    if sequence is not None:
        source["sequence"] = orjson.dumps(sequence).decode()
    return source


def _change(op: str, before: dict | None, after: dict | None, source: dict) -> dict:
    return {"before": before, "after": after, "op": op, "source": source}


def _landed(offset: int, key: dict, value: dict | None) -> bytes:
    """A record as ``capture debezium`` lands it: key, value and delivery offset."""
    return orjson.dumps({"key": key, "value": value, "offset": offset})


def _positions(lines: list[bytes]) -> list[tuple[str, dict, tuple[int, ...], tuple[str, ...]]]:
    out = []
    for _, events in parse_lines(lines):
        for e in events:
            out.append((e.op, e.key, e.position, tuple(e.unchanged or ())))
    return out


def test_a_landed_key_change_shares_the_deletes_position() -> None:
    move = _source(lsn=900, tx=7)
    lines = [
        _landed(4, {"id": 1}, _change("u", None, {"id": 1, "doc": UNAVAILABLE}, _source(800, 6))),
        _landed(5, {"id": 1}, _change("d", {"id": 1}, None, move)),
        _landed(6, {"id": 1}, None),  # the tombstone
        _landed(7, {"id": 2}, _change("c", None, {"id": 2, "doc": UNAVAILABLE}, move)),
        _landed(8, {"id": 3}, _change("c", None, {"id": 3, "doc": "x"}, _source(1000, 8))),
    ]
    assert _positions(lines) == [
        ("u", {"id": 1}, (0, 4), ("doc",)),
        ("d", {"id": 1}, (0, 5, 0), ()),
        ("c", {"id": 2}, (0, 5, 1), ("doc",)),  # before the next delivered event, after its delete
        ("c", {"id": 3}, (0, 8), ()),
    ]


def test_only_a_create_of_the_same_wal_record_is_paired() -> None:
    lines = [
        _landed(1, {"id": 1}, _change("d", {"id": 1}, None, _source(500, 3))),
        _landed(2, {"id": 2}, _change("c", None, {"id": 2}, _source(600, 4))),  # another transaction
        _landed(3, {"id": 3}, _change("d", {"id": 3}, None, _source(700, 5))),
        _landed(4, {"id": 4}, _change("u", {"id": 4}, {"id": 4}, _source(710, 5))),
        _landed(5, {"id": 3}, _change("c", None, {"id": 3}, _source(720, 5))),  # same transaction, later
    ]
    assert [p for _, _, p, _ in _positions(lines)] == [(0, 1, 0), (0, 2), (0, 3, 0), (0, 4), (0, 5)]


def test_without_delivery_offsets_the_pair_shares_its_sequence_position() -> None:
    move = _source(lsn=2000, tx=9, sequence=["1500", "2000"])
    lines = [
        orjson.dumps({"key": {"id": 1}, "value": _change("d", {"id": 1}, None, move)}),
        orjson.dumps({"key": {"id": 2}, "value": _change("c", None, {"id": 2}, move)}),
    ]
    assert [p for _, _, p, _ in _positions(lines)] == [(1500, 2000, 0), (1500, 2000, 1)]


def test_a_key_change_cut_between_two_batch_files_is_paired_from_the_line_carried_over() -> None:
    """A batch can end after a key change's delete; ``capture debezium`` then starts the next file
    with that delete in a ``follows`` line, and ingest, parsing each file alone, pairs the create."""
    from cdc_backfill.capture.debezium.batch_files import follows_line

    move = _source(lsn=900, tx=7)
    first = [
        _landed(4, {"id": 1}, _change("u", None, {"id": 1, "doc": "x"}, _source(800, 6))),
        _landed(5, {"id": 1}, _change("d", {"id": 1}, None, move)),
    ]
    carried = follows_line(b"\n".join(first) + b"\n")
    assert carried.startswith(b'{"follows":') and carried.endswith(b"}\n")
    second = [
        carried.rstrip(b"\n"),
        _landed(6, {"id": 2}, _change("c", None, {"id": 2, "doc": UNAVAILABLE}, move)),
        _landed(7, {"id": 3}, _change("c", None, {"id": 3, "doc": "y"}, _source(1000, 8))),
    ]
    assert _positions(first)[1] == ("d", {"id": 1}, (0, 5, 0), ())
    assert _positions(second) == [
        ("c", {"id": 2}, (0, 5, 1), ("doc",)),  # the delete's position, as within one file
        ("c", {"id": 3}, (0, 7), ()),
    ]
    # without the carried line it stays unpaired (its row is then re-read)
    assert _positions(second[1:])[0] == ("c", {"id": 2}, (0, 6), ("doc",))
    # a file ending in anything but a delete carries nothing
    assert follows_line(b"\n".join(first[:1]) + b"\n") == b""
