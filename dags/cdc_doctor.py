"""cdc_doctor: check from inside an Airflow worker that the source, Java and Spark are usable."""

from __future__ import annotations

from airflow.sdk import dag, task

from cdc_backfill.airflow.params import doctor_params


@dag(
    dag_id="cdc_doctor",
    description="Check from a worker that the source, Java and Spark are usable",
    schedule=None,
    catchup=False,
    tags=["cdc_backfill"],
    doc_md=__doc__,
    params=doctor_params(),
)
def cdc_doctor() -> None:
    @task
    def check_stack(params: dict | None = None) -> list[dict[str, object]]:
        from cdc_backfill.airflow.tasks import doctor_task

        return doctor_task((params or {}).get("source_conn_id"))

    check_stack()


cdc_doctor()
