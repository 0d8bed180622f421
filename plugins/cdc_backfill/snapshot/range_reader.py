"""One reader's work on one key range (docs/design.md §4, steps 1 to 5): chunk after chunk, each read between
its own low and high watermark, landed on a helper thread while the next chunk is read, its progress
recorded in chunk order and only after the chunk has landed."""

from __future__ import annotations

import functools
import logging
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from cdc_backfill.signals.marks import window_data
from cdc_backfill.signals.model import WINDOW_CLOSE, WINDOW_OPEN, Signal, close_id, open_id
from cdc_backfill.signals.statuses import RangeStatus
from cdc_backfill.signals.tables import utc_now
from cdc_backfill.signals.validate import CollectionPlan
from cdc_backfill.snapshot.chunks import (
    chunk_end,
    key_columns,
    land_chunk,
    read_chunk,
    read_events,
    write_watermark,
)
from cdc_backfill.snapshot.faults import crash_point
from cdc_backfill.snapshot.progress import NULL_RANGE, RangeProgress
from cdc_backfill.snapshot.shape import TableShape
from cdc_backfill.snapshot.sizing import next_chunk_size
from cdc_backfill.snapshot.sql import ChunkTable, chunk_select, compile_sql, key_params

if TYPE_CHECKING:
    from cdc_backfill.snapshot.engine import SnapshotEngine

log = logging.getLogger(__name__)


def chunk_query(
    ct: ChunkTable,
    dialect: str,
    plan: CollectionPlan,
    rng: RangeProgress,
    after: list[str] | None,
    size: int,
    key_text: bool = True,
) -> tuple[str, dict[str, str]]:
    """The next chunk's SQL and parameters: keys after ``after`` up to the range's end, at most ``size``
    of them; the range of NULL keys is read whole in one chunk (it has no order to page by).
    ``key_text``: the key's text columns appended to each row (for the next chunk's start)."""
    null_range = rng.range_no == NULL_RANGE
    sql = chunk_sql(
        ct,
        dialect,
        after=after is not None and not null_range,
        upto=rng.hi is not None and not null_range,
        limit=None if null_range else size,
        condition=plan.condition,
        null_keys=null_range,
        key_text=key_text,
    )
    return sql, {**key_params("lo", after), **key_params("hi", rng.hi)}


@functools.lru_cache(maxsize=64)
def chunk_sql(
    ct: ChunkTable,
    dialect: str,
    *,
    after: bool,
    upto: bool,
    limit: int | None,
    condition: str | None,
    null_keys: bool,
    key_text: bool = True,
) -> str:
    """A chunk's statement compiled once per shape: a range's chunks differ only in their key values,
    and compiling it for each chunk took the reader nearly as long as the chunk's two watermarks."""
    stmt = chunk_select(
        ct,
        dialect,
        after=after,
        upto=upto,
        limit=limit,
        condition=condition,
        null_keys=null_keys,
        key_text=key_text,
    )
    return compile_sql(stmt, dialect)


class RangeReader:
    """Reads ranges of one collection over one reader's connection, for ``snapshot``: it asks whether to
    go on before each chunk, and counts each chunk it landed. A chunk's conversion to Arrow, landing and
    progress record run on the reader's lander thread while the next chunk is read, across ranges too
    (a range's last chunk lands while the next range's first is read); ``close`` waits for the last."""

    def __init__(
        self,
        snapshot: SnapshotEngine,
        sig: Signal,
        plan: CollectionPlan,
        shape: TableShape,
        conn: Any,
        adbc_conn: Any,
    ) -> None:
        self.snapshot = snapshot
        self.sig = sig
        self.plan = plan
        self.shape = shape
        self.ct = shape.chunk_table()
        self.conn = conn  # the watermarks'
        self.adbc_conn = adbc_conn  # the chunks' reads
        self.size = plan.chunk_size  # rows the next chunk asks for: grows when the plan is adaptive
        # the key's text appended to each row only where its lake values do not give it plainly
        self.key_text = not shape.plain_key()
        self._lander = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lander")
        self._landing: Future[None] | None = None

    def read(self, rng: RangeProgress) -> None:
        """Chunk after chunk until the range is done, or the engine is paused or stopped. At most two
        chunks of a reader are in memory (one landing, one being read); progress is recorded in chunk
        order and only after the chunk has landed."""
        if rng.status == RangeStatus.PENDING:
            self.snapshot.progress.update(rng, status=RangeStatus.RUNNING, started_at=utc_now())
        after = rng.start_after
        chunks = rng.chunks_done
        rows = rng.rows_read
        while self.snapshot.keeps_reading(self.sig.id, self.plan.collection):
            size = self.size
            chunk_id, chunk_rows, n, last, seconds = self._chunk(after, rng, chunks + 1)
            chunks += 1
            rows += n
            done = rng.range_no == NULL_RANGE or n < size or last is None
            if self.plan.adaptive:
                self.size = next_chunk_size(size, self.plan.chunk_size, n, chunk_rows.nbytes, seconds)
            self._wait_landed()  # the previous chunk has landed and its progress is recorded
            self._landing = self._lander.submit(
                self._land_and_record, chunk_id, chunk_rows, rng, chunks, last if last is not None else after, rows, done
            )  # fmt: skip
            if done:
                return
            after = last

    def close(self) -> None:
        """Wait for the last chunk to land and its progress to be recorded (its error raised here), then
        stop the lander."""
        try:
            self._wait_landed()
        finally:
            self._lander.shutdown(wait=True)

    def _wait_landed(self) -> None:
        landing, self._landing = self._landing, None
        if landing is not None:
            landing.result()

    def _chunk(
        self, after: list[str] | None, rng: RangeProgress, chunk_no: int
    ) -> tuple[str, pa.Table, int, list[str | None] | None, float]:
        """Read one chunk between its watermarks; returns (chunk id, its rows, how many, last key as text,
        seconds its window was open). Landing the rows is left to the lander: the reader's pace is the
        snapshot's."""
        snapshot, shape, conn = self.snapshot, self.shape, self.conn
        chunk_id = uuid.uuid4().hex
        where = "null keys" if rng.range_no == NULL_RANGE else f"range {rng.range_no}"
        tag = f"{shape.collection} {where} chunk {chunk_no}"
        data = window_data(shape.collection, self.sig.id)
        write_watermark(conn, snapshot.signal_sql, open_id(chunk_id), WINDOW_OPEN, data)
        opened = time.monotonic()
        log.info("%s: low watermark written", tag)
        crash_point("after-open", chunk_no)
        if snapshot.window_hook is not None:
            snapshot.window_hook(shape, after)

        sql, params = chunk_query(self.ct, snapshot.dialect, self.plan, rng, after, self.size, self.key_text)
        key_names = key_columns(self.ct) if self.key_text else []
        rows = read_chunk(conn, self.adbc_conn, sql, params, shape, key_names)  # its own transaction
        n = rows.num_rows
        crash_point("during-read", chunk_no)

        write_watermark(conn, snapshot.signal_sql, close_id(chunk_id), WINDOW_CLOSE, data)
        seconds = time.monotonic() - opened
        log.info("%s: high watermark written", tag)
        crash_point("after-close", chunk_no)
        last = chunk_end(rows, self.ct, self.key_text)
        return chunk_id, rows, n, last, seconds

    def _land_and_record(
        self,
        chunk_id: str,
        chunk_rows: pa.Table,
        rng: RangeProgress,
        chunk_no: int,
        last_key: list[str | None] | None,
        rows: int,
        done: bool,
    ) -> None:
        """Steps 4 and 5: the chunk's rows (``chunk_rows``) as READ events in a chunk file, then its
        progress (``chunk_no`` chunks of the range done, ``rows`` rows read); a range a stop ended
        meanwhile keeps its status."""
        table = read_events(chunk_rows, self.shape, chunk_id, self.sig.id)
        land_chunk(self.snapshot.landing, self.shape, chunk_id, table, self.snapshot.chunk_compression)
        log.info(
            "%s range %s chunk %s: %s rows landed",
            self.shape.collection,
            rng.range_no,
            chunk_no,
            table.num_rows,
        )
        crash_point("after-landing", chunk_no)
        self.snapshot.progress.update(
            rng,
            only_if_active=True,
            last_key=last_key,
            chunks_done=chunk_no,
            rows_read=rows,
            status=RangeStatus.DONE if done else RangeStatus.RUNNING,
        )
        crash_point("after-progress", chunk_no)
        self.snapshot.count_landed(table.num_rows)
