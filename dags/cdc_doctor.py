"""cdc_doctor: check from inside an Airflow worker that the source, Java and Spark are usable."""

from __future__ import annotations

from airflow.sdk import Param, dag, task


@dag(
    dag_id="cdc_doctor",
    schedule=None,
    catchup=False,
    tags=["cdc_backfill"],
    doc_md=__doc__,
    params={
        "source_conn_id": Param(
            "",
            type="string",
            title="Source connection id",
            description="Airflow connection of the source database; empty: the project's configured "
            "source, else an embedded PostgreSQL started for the check.",
        ),
    },
)
def cdc_doctor() -> None:
    @task
    def check_stack(params: dict | None = None) -> list[dict[str, object]]:
        from cdc_backfill.airflow.tasks import doctor_task

        return doctor_task((params or {}).get("source_conn_id", ""))

    check_stack()


cdc_doctor()
