"""Random histories in DataWorks' whole-database sync format, delivered out of order (issue 70's
property test): two tables (one keyed by ``primaryKey``, one by the hidden row id), inserts, updates
in both forms, key changes in both forms, deletes and re-inserts of the same key, truncates, schema
changes and heartbeats; and the replay that says what the state must be after any prefix of the
deliveries: every record delivered so far applied in ``sequenceId`` order, whatever order it arrived in.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

ROW_ID = "#alibaba_rds_row_id#"
TABLES = {"d.orders": "id", "d.nopk": ROW_ID}  # collection -> its key column
COLUMNS = {
    "d.orders": [{"name": "id", "type": "LONG"}, {"name": "v", "type": "STRING"}],
    "d.nopk": [{"name": "v", "type": "STRING"}, {"name": ROW_ID, "type": "LONG"}],
}


# how often each change comes: a truncate rarely, so that the tables hold rows between them
KINDS = {"insert": 8, "update": 5, "move": 2, "delete": 3, "truncate": 0.3, "ddl": 0.5, "beat": 0.5}


def record(collection: str, seq: int, op: str, before: dict | None = None, after: dict | None = None,
           ddl: str | None = None) -> dict[str, Any]:  # fmt: skip
    """One record as DataWorks writes it."""
    db, table = collection.split(".")
    key = TABLES[collection]
    wrap = lambda row: None if row is None else {"dataColumn": row}  # noqa: E731
    return {
        "schema": {"dataColumn": COLUMNS[collection], "primaryKey": None if key == ROW_ID else key,
                   "source": {"dbType": "MySQL", "dbName": db, "tableName": table}},
        "payload": {"before": wrap(before), "after": wrap(after), "sequenceId": str(seq), "op": op,
                    "timestamp": {"eventTime": 1_700_000_000_000 + seq}, "ddl": ddl},
        "version": "0.0.1",
    }  # fmt: skip


@dataclass
class History:
    """Records in ``sequenceId`` order (a pair shares one); :meth:`replay` of any subset."""

    records: list[dict[str, Any]] = field(default_factory=list)
    rows: dict[str, dict[int, str]] = field(default_factory=lambda: {c: {} for c in TABLES})
    seq: int = 1_620_457_642_589_000_000  # as the seed's: beyond 2**53, compared as integers

    def _row(self, collection: str, k: int, v: str) -> dict[str, Any]:
        return {TABLES[collection]: k, "v": v}

    def step(self, rng: random.Random) -> None:
        """One random change of a random table."""
        coll = rng.choice(list(TABLES))
        rows = self.rows[coll]
        self.seq += rng.randint(1, 3)
        kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
        if kind in ("update", "move", "delete") and not rows:
            kind = "insert"
        if kind == "insert":  # a new key, or one deleted before coming back
            k = rng.choice([k for k in range(1, 40) if k not in rows])
            rows[k] = f"v{self.seq}"
            self.records.append(record(coll, self.seq, "INSERT", after=self._row(coll, k, rows[k])))
        elif kind in ("update", "move"):
            k = rng.choice(sorted(rows))
            new = rng.choice([n for n in range(1, 40) if n not in rows]) if kind == "move" else k
            old_row, value = self._row(coll, k, rows.pop(k)), f"v{self.seq}"
            rows[new] = value
            if rng.random() < 0.5:  # two records, one sequenceId
                self.records.append(record(coll, self.seq, "UPDATE_BEFOR", before=old_row))
                self.records.append(record(coll, self.seq, "UPDATE_AFTER", after=self._row(coll, new, value)))
            else:
                self.records.append(record(coll, self.seq, "UPDATE_AFTER", before=old_row,
                                           after=self._row(coll, new, value)))  # fmt: skip
        elif kind == "delete":
            k = rng.choice(sorted(rows))
            self.records.append(record(coll, self.seq, "DELETE", before=self._row(coll, k, rows.pop(k))))
        elif kind == "truncate":
            rows.clear()
            self.records.append(record(coll, self.seq, "TRUNCATE"))
        elif kind == "ddl":
            self.records.append(record(coll, self.seq, "ALTER", ddl=f"ALTER TABLE t COMMENT 'at {self.seq}'"))
        else:
            self.records.append(record(coll, self.seq, "MHEARTBEAT"))


def order(rec: dict[str, Any]) -> tuple[int, int]:
    """A record's place: its sequenceId as an integer, a pair's UPDATE_BEFOR first."""
    payload = rec["payload"]
    return int(payload["sequenceId"]), 0 if payload["op"] == "UPDATE_BEFOR" else 1


def replay(delivered: list[dict[str, Any]]) -> dict[str, dict[int, str]]:
    """What every record delivered so far makes of the tables, applied in ``sequenceId`` order."""
    state: dict[str, dict[int, str]] = {c: {} for c in TABLES}
    for rec in sorted(delivered, key=order):
        db, table = rec["schema"]["source"]["dbName"], rec["schema"]["source"]["tableName"]
        coll, payload = f"{db}.{table}", rec["payload"]
        key = TABLES[coll]
        before = (payload["before"] or {}).get("dataColumn")
        after = (payload["after"] or {}).get("dataColumn")
        op = payload["op"]
        if op == "TRUNCATE":
            state[coll].clear()
        elif op in ("DELETE", "UPDATE_BEFOR") or (
            op == "UPDATE_AFTER" and before and after and before[key] != after[key]
        ):
            state[coll].pop(before[key], None)
        if op in ("INSERT", "UPDATE_AFTER"):
            state[coll][after[key]] = after["v"]
    return state


def deliveries(history: History, rng: random.Random, batches: int) -> list[list[dict[str, Any]]]:
    """The history's records shuffled, each key's records in any order, cut into ``batches`` batches."""
    shuffled = list(history.records)
    rng.shuffle(shuffled)
    cuts = sorted(rng.sample(range(1, len(shuffled)), batches - 1)) if len(shuffled) > batches else []
    return [shuffled[a:b] for a, b in zip([0, *cuts], [*cuts, len(shuffled)], strict=True)]
