"""The PostgreSQL capture landing the typed event log (DESIGN.md §5.0) instead of JSON lines: each
relation message describes its collection's log schema, each change becomes a CSV row of its text
values (``pg.tuplecsv``) typed at the roll (``pg.csvtext``), and a roll lands every collection's file
then its manifest (``eventlog.writer``) before the slot is told.

Positions are (commit LSN, LSN of the change); a key change lands as a delete at (commit, lsn, 0) and a
create at (commit, lsn, 1), so that the two keep their order by position alone. Logical decoding
messages are not events of any collection: they only move the landed position (a roll manifest with
no file), which is what the Airflow sensor's fence needs.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from cdc_backfill.capture.landing import landed_position
from cdc_backfill.capture.lines import RelInfo, TxnState
from cdc_backfill.capture.postgres import PostgresCapture
from cdc_backfill.eventlog.schema import LogVersion
from cdc_backfill.eventlog.store import describe
from cdc_backfill.eventlog.writer import LogWriter, landed_log_position
from cdc_backfill.pg import pgoutput
from cdc_backfill.pg.tuplecsv import tuple_csv
from cdc_backfill.pgtypes import PgColumn

_RELID = struct.Struct(">I")


class TypedPostgresCapture(PostgresCapture):
    """``PostgresCapture`` whose landing is the typed event log."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._versions: dict[str, LogVersion] = {}  # each collection's current log schema version

    def _make_writer(self, roll_bytes: int, roll_seconds: float) -> Any:
        # about 100 bytes an event: a roll of roll_bytes holds this many
        return LogWriter(Path(self.landing), f"capture:{self.slot}", max(1, roll_bytes // 100), roll_seconds)

    def _landed(self) -> tuple[int, ...]:
        # JSON lines landed earlier by this slot count too: a landing switched to the log goes on from
        # where the JSON stopped, and the reconcile reads both
        return max(landed_log_position(self.landing), landed_position(self.landing))

    def _describe(self, coll: str, key_names: list[str], rel: pgoutput.Relation, types: list[str]) -> None:
        columns = [PgColumn(c.name, t, c.type_oid) for c, t in zip(rel.columns, types, strict=True)]
        version = describe(self.landing, coll, columns, key_names)
        if self.writer.has(coll) and self._versions.get(coll) != version:
            self.writer.roll()  # its buffered events belong to the earlier schema version
        self._versions[coll] = version

    def _land(self, rel: RelInfo, st: TxnState, position: tuple[int, ...], op: str, line: bytes,
              unchanged: list[int]) -> None:  # fmt: skip
        if st.maybe_landed and position <= self._skip_to:
            self.stats.skipped += 1
            return
        self.writer.write_row(
            rel.collection, self._versions[rel.collection], op, position, line, st.ts_ms,
            [rel.names[i] for i in unchanged] if unchanged else None,
        )  # fmt: skip
        self.stats.events += 1

    def _emit(
        self, rel: RelInfo, st: TxnState, lsn: int, op: str, key: bytes, before: bytes, after: bytes
    ) -> None:
        # only truncates come here: a row event of the typed log goes through _row_change
        self._land(rel, st, (st.commit_lsn, lsn), op, b"," * (len(rel.names) - 1) + b"\n", [])

    def _message(self, m: pgoutput.Message, lsn: int, st: TxnState) -> None:
        # Not landed as an event: only the position it stands at, so that the landed position passes
        # it (the Airflow sensor's fence is such a message, in a transaction of its own).
        commit = st.commit_lsn if (m.transactional and st.in_txn) else m.lsn
        if (commit, lsn) > self._skip_to:
            self.writer.advance((commit, lsn))

    def _row_change(self, kind: int, buf: bytes, lsn: int, st: TxnState) -> None:
        (relid,) = _RELID.unpack_from(buf, 1)
        rel = self._relations[relid]
        at = (st.commit_lsn, lsn)
        if kind == 0x49:  # I: 'N' new tuple
            line, unchanged, _, _ = tuple_csv(buf, 6)
            self._land(rel, st, at, "c", line, unchanged)
            return
        sub = buf[5]
        old = old_key = None
        pos = 6
        if sub in (0x4B, 0x4F):  # 'K' the old key, 'O' the whole old row
            old, _, old_key, pos = tuple_csv(buf, 6, rel.key_idx)
            pos += 1  # the 'N' of an update's new tuple
        if kind == 0x44:  # D
            if old is None:
                raise pgoutput.ProtocolError("delete without an old tuple")
            self._land(rel, st, at, "d", old, [])
            return
        line, unchanged, key, _ = tuple_csv(buf, pos, rel.key_idx)  # U
        if old is not None and old_key != key:
            # a key change: a delete of the old key, then a create of the new one
            self._land(rel, st, (*at, 0), "d", old, [])
            self._land(rel, st, (*at, 1), "c", line, unchanged)
            return
        self._land(rel, st, at, "u", line, unchanged)
