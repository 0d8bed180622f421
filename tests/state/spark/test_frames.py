"""A state's versions: a failed write leaves the previous version current and readable."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F

from cdc_backfill.reconcile.spark.state import current_path, read_log, write_version

pytestmark = pytest.mark.spark


def test_a_failed_run_leaves_the_previous_version_current(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_version(spark.range(3), tmp_path, "s.t", {"rows": 3})
    boom = F.udf(lambda x: 1 // 0 if x == 2 else x, "long")  # fails in the middle of writing
    with pytest.raises(Exception, match="ZeroDivisionError"):
        write_version(spark.range(5).select(boom("id").alias("id")), tmp_path, "s.t", {"rows": 5})
    current = current_path(tmp_path, "s.t")
    assert current is not None and current.resolve().name == "v000001"
    assert sorted(r.id for r in spark.read.parquet(str(current)).collect()) == [0, 1, 2]
    assert [v["version"] for v in read_log(tmp_path / "s.t")] == [1]
    write_version(spark.range(4), tmp_path, "s.t", {"rows": 4})  # the next run goes on
    assert spark.read.parquet(str(current_path(tmp_path, "s.t"))).count() == 4
