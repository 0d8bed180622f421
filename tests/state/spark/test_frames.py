"""A state's versions written by Spark and committed to Delta: a failed write leaves the previous
version current and readable, and leaves nothing any reader sees."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F

from cdc_backfill.state.spark.frames import read_version, write_version
from cdc_backfill.state.table import StateTable, current_version

pytestmark = pytest.mark.spark


def test_a_failed_run_leaves_the_previous_version_current(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert write_version(spark.range(3), tmp_path, "s.t", None, {"rows": 3}) == 0
    boom = F.udf(lambda x: 1 // 0 if x == 2 else x, "long")  # fails in the middle of writing
    with pytest.raises(Exception, match="ZeroDivisionError"):
        write_version(
            spark.range(5).select(boom("id").alias("id")),
            tmp_path,
            "s.t",
            current_version(tmp_path, "s.t"),
            {"rows": 5},
        )
    current = current_version(tmp_path, "s.t")
    assert current is not None and current.version == 0
    assert sorted(r.id for r in read_version(spark, current).collect()) == [0, 1, 2]
    assert [h["version"] for h in StateTable(tmp_path, "s.t").history()] == [0]
    # the next run goes on from the version it read; the failed run's files are named by no version
    write_version(spark.range(4), tmp_path, "s.t", current, {"rows": 4})
    after = current_version(tmp_path, "s.t")
    assert after is not None and after.version == 1 and read_version(spark, after).count() == 4
    assert spark.read.parquet(*after.files).count() == 4


def test_an_empty_version_reads_as_empty_with_its_columns(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    write_version(
        spark.range(3).where("id < 0").withColumn("v", F.lit("x")), tmp_path, "s.e", None, {"rows": 0}
    )
    current = current_version(tmp_path, "s.e")
    assert current is not None
    df = read_version(spark, current)
    assert df.columns == ["id", "v"] and df.count() == 0


def test_a_run_that_read_an_older_version_commits_nothing(spark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from cdc_backfill.state.table import StateError

    write_version(spark.range(2), tmp_path, "s.c", None, {"rows": 2})
    read = current_version(tmp_path, "s.c")
    write_version(spark.range(3), tmp_path, "s.c", read, {"rows": 3})  # another run, meanwhile
    with pytest.raises(StateError, match="another run committed to the state since version 0"):
        write_version(spark.range(9), tmp_path, "s.c", read, {"rows": 9})
    current = current_version(tmp_path, "s.c")
    assert current is not None and current.version == 1 and read_version(spark, current).count() == 3
