"""After the reconcile: re-read the rows the stream never sent a value for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import Context

from cdc_backfill.airflow import plans
from cdc_backfill.airflow.operators.base import CdcOperator, refuse
from cdc_backfill.lakepath import lake_path


class CdcRereadOperator(CdcOperator):
    """Send an execute-snapshot of exactly the keys whose rows miss a value in the reconciled state
    (``cdc-backfill signal reread``): a key change of a row whose TOASTed column was unchanged, when the
    old key's value was never known. The snapshot engine reads them (the next snapshot task, or one
    running with ``--follow``) and the next reconcile completes the rows. Returns the signal ids sent.
    """

    template_fields: Sequence[str] = ("collections", "state_dir", "source_conn_id")

    def __init__(self, *, collections: Any, state_dir: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.collections = collections
        self.state_dir = state_dir

    def execute(self, context: Context) -> list[str]:
        from cdc_backfill.reconcile.reread import RereadError, plan_rereads, reread_filter
        from cdc_backfill.signals.model import SignalError

        hook = self.hook()
        sent = []
        try:
            for plan in plan_rereads(lake_path(str(self.state_dir)), plans.as_list(self.collections)):
                coll = plan.collection
                if not plan.missing:
                    self.log.info("%s: every row has a value for every column: nothing to re-read", coll)
                    continue
                self.log.info("%s: %s row(s) miss a value the stream never sent: re-read", coll, plan.missing)
                for sig in plan.signals:
                    hook.send_signal(sig)
                    self.log.info("%s: execute-snapshot %s sent: %s", coll, sig.id, reread_filter(sig))
                    sent.append(sig.id)
        except (RereadError, SignalError) as exc:
            raise refuse(exc) from exc
        return sent
