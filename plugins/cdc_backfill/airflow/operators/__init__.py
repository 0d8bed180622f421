"""Operators: templated fields in, one call into the hook or the package out.

A skipped task in the project's DAGs means one thing: the operator stopped that snapshot (stop-snapshot)
or asked for no verify. Everything else either succeeds or fails with the reason.
"""

from cdc_backfill.airflow.operators.base import prepare_runtime
from cdc_backfill.airflow.operators.capture import CdcCaptureDrainOperator
from cdc_backfill.airflow.operators.reconcile import CdcReconcileOperator
from cdc_backfill.airflow.operators.reread import CdcRereadOperator
from cdc_backfill.airflow.operators.signals import (
    CdcExecuteSnapshotOperator,
    CdcStopSnapshotOperator,
    CdcValidateSnapshotOperator,
)
from cdc_backfill.airflow.operators.snapshot import CdcSnapshotOperator
from cdc_backfill.airflow.operators.verify import CdcVerifyOperator

__all__ = [
    "CdcCaptureDrainOperator",
    "CdcExecuteSnapshotOperator",
    "CdcReconcileOperator",
    "CdcRereadOperator",
    "CdcSnapshotOperator",
    "CdcStopSnapshotOperator",
    "CdcValidateSnapshotOperator",
    "CdcVerifyOperator",
    "prepare_runtime",
]
