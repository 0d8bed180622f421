"""``cdc-backfill dags --into FOLDER``: a user's dags folder gets one-line DAG files that Airflow loads,
and a file of theirs in the way is refused, not overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import cli

pytestmark = pytest.mark.airflow


def test_the_written_dag_files_load_as_the_products_dags(airflow_db: str, tmp_path: Path) -> None:
    from airflow.dag_processing.dagbag import DagBag

    res = cli(tmp_path, "dags", "--into", "dags")  # a relative folder, as typed
    assert res.returncode == 0, res.stderr
    written = sorted(Path(p).name for p in res.stdout.split())
    assert "cdc_incremental_snapshot.py" in written and len(written) == 5
    assert "AIRFLOW__CORE__DAGS_FOLDER=" + str(tmp_path / "dags") in res.stderr
    bag = DagBag(dag_folder=str(tmp_path / "dags"))
    assert bag.import_errors == {}
    assert set(bag.dag_ids) == {
        "cdc_incremental_snapshot", "cdc_capture_postgres", "cdc_stop_snapshot", "cdc_doctor",
    }  # fmt: skip
    dag = bag.get_dag("cdc_incremental_snapshot")
    assert dag.fileloc == str(tmp_path / "dags" / "cdc_incremental_snapshot.py")  # the user's file
    assert "collections" in dag.params


def test_a_changed_dag_file_is_refused_unless_forced(tmp_path: Path) -> None:
    assert cli(tmp_path, "dags", "--into", "dags").returncode == 0
    mine = tmp_path / "dags" / "cdc_doctor.py"
    mine.write_text(mine.read_text() + "# mine\n")
    again = cli(tmp_path, "dags", "--into", "dags")
    assert again.returncode == 1 and again.stdout == ""
    assert again.stderr.count("\n") == 1 and "cdc_doctor.py" in again.stderr and "--force" in again.stderr
    assert mine.read_text().endswith("# mine\n")  # nothing written
    assert cli(tmp_path, "dags", "--into", "dags", "--force").returncode == 0
    assert not mine.read_text().endswith("# mine\n")
