"""Signal rows read with Arrow: a schema version without a column reads null there; ids are text."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from cdc_backfill.eventlog.schema import OP, POSITION
from cdc_backfill.reconcile.signal_files import landed_signal_rows, wanted
from cdc_backfill.reconcile.windows import SignalRow


def test_rows_of_versions_without_a_column_and_with_other_types(tmp_path: Path) -> None:
    old, new = tmp_path / "v1.parquet", tmp_path / "v2.parquet"
    pq.write_table(
        pa.table({"id": ["c1-open", "c1-close"], OP: ["c", "c"], POSITION: [b"\x01", b"\x03"]}), old
    )
    pq.write_table(
        pa.table({"id": pa.array([7, 8], pa.int64()), OP: ["c", "u"], POSITION: [b"\x02", b"\x04"],
                  "type": ["execute-snapshot", "x"], "data": ["{}", None]}),
        new,
    )  # fmt: skip
    rows = landed_signal_rows([old, new], [], b"\x01")
    assert rows == [
        SignalRow("7", "c", b"\x02", "{}", "execute-snapshot"),
        SignalRow("c1-close", "c", b"\x03", None, None),
    ]


def test_the_rows_windows_and_marks_use() -> None:
    assert wanted("c", "c1-open", None) and wanted("d", "c1-open", None) and wanted("r", "s-done", None)
    assert not wanted("u", "c1-open", None)  # an update of a watermark row is no end of a window
    assert (
        wanted("c", None, "execute-snapshot") and not wanted("c", None, None) and not wanted("c", "x", "log")
    )
