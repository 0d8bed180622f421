"""Stream positions as tuples of non-negative integers, compared element by element (docs/design.md §5).

Every source writes its position differently; all are turned into integers here so that no position
is ever compared as a string ("0000000A" vs "00000009", "10" vs "9") or as a float.
"""

from __future__ import annotations

from typing import Any

import orjson

from cdc_backfill.events.model import ParseError

# A DataWorks update's two halves share one sequenceId: the before-half sorts first.
DATAWORKS_BEFORE_HALF = 0
DATAWORKS_OTHER = 1
# A key change's delete and create at one position: its last element (docs/design.md §6 rule 8).
KEY_CHANGE_DELETE = 0
KEY_CHANGE_CREATE = 1


def as_int(value: Any, what: str) -> int:
    """A decimal integer of any size from an int or a digit string (SCNs, sequenceIds, LSNs)."""
    # The common cases first: this runs several times for every event.
    if type(value) is int and value >= 0:
        return value
    if type(value) is str and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, bool):
        raise ParseError(f"{what} is a boolean, not an integer")
    if isinstance(value, int):
        if value < 0:
            raise ParseError(f"{what} is negative: {value}")
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise ParseError(f"{what} is not an integer: {value!r}")


def sqlserver_lsn(value: Any, what: str = "LSN") -> int:
    """``"00000027:00000758:0003"`` as one number: the fixed-width hex parts concatenated.

    SQL Server LSNs are (VLF sequence, log block, slot) in fixed widths 8:8:4, so the concatenated hex
    compares exactly like the LSN. A missing LSN (``None``) is an error: it cannot be ordered.
    """
    if not isinstance(value, str):
        raise ParseError(f"{what} is not a hex string: {value!r}")
    parts = value.split(":")
    if len(parts) != 3 or [len(p) for p in parts] != [8, 8, 4]:
        raise ParseError(f"{what} is not of the form XXXXXXXX:XXXXXXXX:XXXX: {value!r}")
    try:
        return int("".join(parts), 16)
    except ValueError:
        raise ParseError(f"{what} has a non-hex digit: {value!r}") from None


def pg_lsn(value: Any, what: str = "lsn") -> int:
    """A PostgreSQL LSN from Debezium's integer form or the server's text form ``16/B374D848``."""
    if isinstance(value, str) and "/" in value:
        hi, _, lo = value.partition("/")
        try:
            return (int(hi, 16) << 32) | int(lo, 16)
        except ValueError:
            raise ParseError(f"{what} is not an LSN: {value!r}") from None
    return as_int(value, what)


def debezium_pg_sequence(value: Any) -> tuple[int | None, int] | None:
    """Debezium PostgreSQL's ``source.sequence``: a JSON text ``["<last commit lsn>", "<lsn>"]``.

    The first element is null for the first transaction after the connector started (placed by
    :class:`PgRestartOrder`); None when absent or without an LSN.
    """
    if value is None:
        return None
    try:
        seq = orjson.loads(value) if isinstance(value, str) else value
    except orjson.JSONDecodeError:
        raise ParseError(f"source.sequence is not JSON: {value!r}") from None
    if not isinstance(seq, list) or len(seq) != 2:
        raise ParseError(f"source.sequence is not a pair: {value!r}")
    last_commit = None if seq[0] is None else as_int(seq[0], "source.sequence[0]")
    if seq[1] is None:
        return None
    return (last_commit, as_int(seq[1], "source.sequence[1]"))


class PgStream:
    """Places Debezium PostgreSQL events along one stream read in delivery order: key changes paired,
    and events placed by ``sequence`` when no delivery offsets are known.

    A key change reaches Debezium as one WAL record, which it delivers as a delete of the old key and a
    create of the new one (a tombstone between), both with that record's ``lsn`` and ``txId``. Like the
    native capture (docs/design.md §6 rule 8) the delete takes element 0 after its position and the
    create element 1 after the same position, so the reconcile pairs them and the create's unchanged
    TOAST columns carry. A create whose delete came in an earlier file pairs when the file starts with
    that delete (``capture debezium`` writes it, ``events.debezium.follows``); otherwise it stays
    unpaired and its row is re-read.

    After a connector restart the first transaction's ``sequence[0]`` (the commit LSN of the transaction
    before it) is null. Taken as 0 it would sort before everything, and a delete after the restart could
    sort before the update it follows. Its true value is the commit LSN of the transaction delivered just
    before it, which is greater than every commit LSN and every change LSN delivered so far, and smaller
    than the next transaction's ``sequence[0]`` (its own commit). So one more than the greatest of those
    seen so far in this stream sorts it exactly: after everything before it, before everything after.
    A stream that starts with such a transaction has nothing before it to place it after: give the
    delivery offsets (a Kafka sink's, or ``capture debezium``'s landing) for that case.
    """

    def __init__(self, after: int = 0) -> None:
        """``after``: the greatest LSN delivered before this stream's first record, where the stream
        continues one landed earlier (a Kafka partition read in rounds)."""
        self._greatest = after
        self._open: tuple[Any, int] | None = None  # (txId, its commit element) of a placed transaction
        self._delete: tuple[tuple[Any, Any, Any], tuple[int, ...]] | None = None  # the last delete

    def pair(self, op: str, where: tuple[Any, Any, Any], position: tuple[int, ...]) -> tuple[int, ...]:
        """The position of a delete or create ``op`` of a row change at ``where`` = (collection, lsn,
        txId) that ``position`` places: a delete's gets element 0, and a create at the last delete's
        ``where`` is that delete's key change, at element 1 after the delete's position."""
        if not position or where[1] is None:
            return position
        if op == "d":
            self._delete = (where, position)
            return (*position, KEY_CHANGE_DELETE)
        delete, self._delete = self._delete, None
        if op == "c" and delete is not None and delete[0] == where:
            return (*delete[1], KEY_CHANGE_CREATE)
        return position

    def place(self, last_commit: int | None, lsn: int, tx_id: Any) -> tuple[int, int]:
        if last_commit is None:
            if self._open is None or self._open[0] != tx_id or tx_id is None:
                self._open = (tx_id, self._greatest + 1)
            last_commit = self._open[1]
        else:
            self._open = None
        self._greatest = max(self._greatest, last_commit, lsn)
        return (last_commit, lsn)


def position_key(position: tuple[int, ...]) -> bytes:
    """A position as bytes whose unsigned byte order is the position's order (tuples compared element by
    element, a shorter tuple before its extensions): what the typed log stores, so that Spark, Parquet
    statistics and DuckDB compare positions as one binary value, not an array of decimals.

    Each element is its length in bytes (one byte) then its big-endian bytes without leading zeros: a
    longer number is a larger one, and no element's bytes are a prefix of another's, so the first byte
    that differs decides, in the element that differs. Any size up to 255 bytes (SQL Server's 80-bit
    LSNs, DataWorks sequence ids beyond 2**64)."""
    out = bytearray()
    for value in position:
        if value < 0:
            raise ValueError(f"a position element is negative: {value}")
        size = (value.bit_length() + 7) // 8
        if size > 255:
            raise ValueError(f"a position element has more than 255 bytes: {value}")
        out.append(size)
        out += value.to_bytes(size, "big")
    return bytes(out)


def position_of_key(key: bytes) -> tuple[int, ...]:
    """The position :func:`position_key` wrote."""
    out = []
    at = 0
    while at < len(key):
        size = key[at]
        if at + 1 + size > len(key):
            raise ValueError(f"a position key ends inside an element: {key.hex()}")
        out.append(int.from_bytes(key[at + 1 : at + 1 + size], "big"))
        at += 1 + size
    return tuple(out)
