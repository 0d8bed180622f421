"""Signals in the source database: create the tables, send, read back, record and list statuses.

This is the one Python API under the ``cdc-backfill signal`` commands and the Airflow operators.
"""

from __future__ import annotations

import functools
import json
import logging
import uuid
from dataclasses import dataclass, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from cdc_backfill.config import mask_url, source_engine
from cdc_backfill.pg.refusals import source_refusal
from cdc_backfill.signals.model import ENGINE_TYPES, Signal, SignalError, check_row_limits
from cdc_backfill.signals.reflect import read_catalog
from cdc_backfill.signals.source_tables import Catalog, collection_name
from cdc_backfill.signals.statuses import SignalStatus
from cdc_backfill.signals.tables import DEFAULT_SCHEMAS, SIGNAL_TABLE, signal_tables, split_name, utc_now
from cdc_backfill.signals.validate import ValidatedSignal, review, validate

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SignalView:
    """One line of ``signal list``."""

    id: str
    type: str
    collections: list[str]
    status: str
    progress: dict[str, Any] | None
    received_at: str | None
    reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class SignalStore:
    """The signal and status tables of one source database."""

    def __init__(self, url: str, signal_table: str | None = None, sa_engine: sa.Engine | None = None) -> None:
        self.url = url
        self.sa_engine = sa_engine or source_engine(url, pool_pre_ping=True)
        self.dialect = self.sa_engine.dialect.name
        schema, name = split_name(signal_table or SIGNAL_TABLE)
        self.schema = schema or DEFAULT_SCHEMAS.get(self.dialect)
        self.signal, self.status = signal_tables(self.schema, name)

    def __repr__(self) -> str:
        return f"SignalStore({mask_url(self.url)}, {self.signal_table})"

    @property
    def signal_table(self) -> str:
        return collection_name(self.schema or "", self.signal.name) if self.schema else self.signal.name

    @property
    def protected(self) -> tuple[str, ...]:
        if not self.schema:
            return ()
        return (
            collection_name(self.schema, self.signal.name),
            collection_name(self.schema, self.status.name),
        )

    # ------------------------------------------------------------ tables

    def init(self) -> list[str]:
        """Create the signal and status tables if missing; return the names created (idempotent)."""
        created = []
        with self.sa_engine.begin() as conn:
            for table in (self.signal, self.status):
                if not sa.inspect(conn).has_table(table.name, schema=self.schema):
                    table.create(conn)
                    created.append(table.name)
        return created

    def require_tables(self) -> None:
        """Refuse (SignalError) a source whose signal tables were never created."""
        insp = sa.inspect(self.sa_engine)
        for table in (self.signal, self.status):
            if not insp.has_table(table.name, schema=self.schema):
                raise SignalError(missing_tables_hint(collection_name(self.schema or "", table.name)))

    def catalog(self) -> Catalog:
        """Every user table of the source with its columns and primary key (reflected in bulk)."""
        return read_catalog(self.sa_engine)

    # ------------------------------------------------------------ send

    def check(self, signal: Signal, catalog: Catalog | None = None) -> ValidatedSignal:
        """Everything a send checks, without writing: the signal is refused (SignalError) or returned
        resolved, as it is written (``ValidatedSignal.signal``: its patterns named as Debezium's connector
        of this source matches them, ``Catalog.signal_for_debezium``)."""
        tables = catalog or self.catalog()
        written = tables.signal_for_debezium(signal)
        check_row_limits(written)
        validated = validate(signal, tables, self.protected)
        validated.raise_if_any_error()
        return replace(validated, signal=written)

    def send(self, signal: Signal, catalog: Catalog | None = None) -> ValidatedSignal:
        """Validate, then write the signal row and its status row in one transaction."""
        validated = self.check(signal, catalog)
        now = utc_now()
        try:
            with self.sa_engine.begin() as conn:
                conn.execute(sa.insert(self.signal).values(**validated.signal.row()))
                conn.execute(
                    sa.insert(self.status).values(
                        signal_id=signal.id,
                        type=signal.type,
                        collections=json.dumps(list(validated.collections)),
                        status=SignalStatus.ACCEPTED,
                        received_at=now,
                        updated_at=now,
                    )
                )
        except IntegrityError:
            raise SignalError(f"a signal with id {signal.id!r} already exists: choose another --id") from None
        except SQLAlchemyError as exc:
            self.require_tables()
            refusal = source_refusal(exc, self.url)
            raise SignalError(
                f"could not write the signal: {refusal or f'{type(exc).__name__}: {exc.orig or exc}'}"
            ) from None
        log.info(
            "signal %s (%s) written for %s",
            signal.id,
            signal.type,
            ", ".join(validated.collections) or "every collection",
        )
        return validated

    # ------------------------------------------------------------ read back

    def rows(self, operator_only: bool = False) -> list[tuple[str, str, str | None]]:
        """The signal table's rows; ``operator_only`` leaves the engine's window rows out in SQL (there are
        two per chunk, and the engine reads the operators' signals between chunks)."""
        stmt = sa.select(self.signal.c.id, self.signal.c.type, self.signal.c.data)
        if operator_only:
            stmt = stmt.where(self.signal.c.type.not_in(ENGINE_TYPES))
        with self.sa_engine.connect() as conn:
            return [(r.id, r.type, r.data) for r in conn.execute(stmt)]

    def read(self) -> list[tuple[str, Signal | SignalError]]:
        """Every operator signal in the table, parsed, or the reason it cannot be (window rows left out)."""
        out: list[tuple[str, Signal | SignalError]] = []
        for id_, type_, data in self.rows(operator_only=True):
            try:
                out.append((id_, Signal.from_row(id_, type_, data)))
            except SignalError as exc:
                out.append((id_, exc))
        return out

    def set_status(
        self,
        signal_id: str,
        status: str,
        *,
        type: str = "",
        reason: str | None = None,
        collections: list[str] | None = None,
        progress: dict[str, Any] | None = None,
    ) -> None:
        """Insert or update a signal's status row (the engine and the reader of plain-SQL signals call this)."""
        now = utc_now()
        values: dict[str, Any] = {"status": status, "updated_at": now}
        if reason is not None:
            values["reason"] = reason[:2048]
        if collections is not None:
            values["collections"] = json.dumps(collections)
        if progress is not None:
            values["progress"] = json.dumps(progress)
        with self.sa_engine.begin() as conn:
            updated = conn.execute(
                sa.update(self.status).where(self.status.c.signal_id == signal_id).values(**values)
            ).rowcount
            if not updated:
                conn.execute(
                    sa.insert(self.status).values(
                        signal_id=signal_id, type=type or "?", received_at=now, **values
                    )
                )

    def write_mark(self, kind: str, suffix: str, data: str) -> None:
        """Insert one of the engine's own rows around a collection (start, done, ended: ``signals.marks``)
        and commit: the stream carries it at its position."""
        with self.sa_engine.begin() as conn:
            conn.execute(sa.insert(self.signal).values(id=uuid.uuid4().hex + suffix, type=kind, data=data))

    def write_marker(self) -> str:
        """Insert and commit a ``log`` signal (Debezium only logs it) as a marker of "now" in the stream:
        a consumer that has it has every change committed before. Returns its id."""
        marker = f"marker-{uuid.uuid4().hex}"  # 39 characters: the id column takes 42
        data = json.dumps({"message": f"cdc_backfill marker {marker}"})
        with self.sa_engine.begin() as conn:
            conn.execute(sa.insert(self.signal).values(id=marker, type="log", data=data))
        return marker

    def review_new(self) -> list[tuple[str, ValidatedSignal | SignalError]]:
        """Check every signal nobody has looked at yet (inserted by plain SQL, or by Debezium users) and
        record it as accepted or rejected with the reason. The engine calls this before it acts.

        A signal with some invalid collections is accepted for the others; the reason names the rest.
        """
        with self.sa_engine.connect() as conn:
            seen = {r.signal_id for r in conn.execute(sa.select(self.status.c.signal_id))}
        catalog = functools.cache(self.catalog)  # read once, and only if a new signal needs it
        out: list[tuple[str, ValidatedSignal | SignalError]] = []
        for id_, parsed in self.read():
            if id_ in seen:
                continue
            verdict = review(parsed, catalog, self.protected)
            self.set_status(
                id_, verdict.status, type=verdict.type, reason=verdict.reason, collections=verdict.collections
            )
            out.append((id_, verdict.outcome))
        return out

    def paused(self) -> frozenset[str]:
        """The ids of signals whose status is paused (none before the status table exists)."""
        with self.sa_engine.connect() as conn:
            if not sa.inspect(conn).has_table(self.status.name, schema=self.status.schema):
                return frozenset()
            rows = conn.execute(
                sa.select(self.status.c.signal_id).where(self.status.c.status == SignalStatus.PAUSED)
            )
            return frozenset(r[0] for r in rows)

    def list(self) -> list[SignalView]:
        """Every signal with its status; a row nobody has looked at yet is 'received'."""
        self.require_tables()
        statuses: dict[str, Any] = {}
        with self.sa_engine.connect() as conn:
            for r in conn.execute(sa.select(self.status)):
                statuses[r.signal_id] = r
        views = [signal_view(id_, parsed, statuses.get(id_)) for id_, parsed in self.read()]
        return sorted(views, key=lambda v: (v.received_at or "", v.id))


def signal_view(id_: str, parsed: Signal | SignalError, st: Any) -> SignalView:
    """A signal as ``signal list`` shows it, from its row parsed and its status row (None: nobody has
    looked at it yet, so it is 'received'; one that does not parse is 'rejected')."""
    if isinstance(parsed, SignalError):
        return SignalView(
            id_, "?", [], st.status if st else SignalStatus.REJECTED, None, _ts(st), str(parsed)
        )
    collections = (
        json.loads(st.collections) if st is not None and st.collections else list(parsed.collections)
    )
    return SignalView(
        id_,
        parsed.type,
        collections,
        st.status if st is not None else SignalStatus.RECEIVED,
        json.loads(st.progress) if st is not None and st.progress else None,
        _ts(st),
        st.reason if st is not None else None,
    )


def missing_tables_hint(table: str) -> str:
    """What a command on a source without the signal tables says (one line)."""
    return f"the source has no {table} table: run `cdc-backfill signal init` on this source first"


def _ts(row: Any) -> str | None:
    if row is None or row.received_at is None:
        return None
    return row.received_at.strftime("%Y-%m-%d %H:%M:%S")
