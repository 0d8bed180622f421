"""Compare each collection's reconciled state with the source."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import Context
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from cdc_backfill.airflow import plans
from cdc_backfill.airflow.operators.base import CdcOperator, prepare_runtime
from cdc_backfill.lakepath import lake_path
from cdc_backfill.signals.statuses import RangeStatus


class CdcVerifyOperator(CdcOperator):
    """Compare each collection's reconciled state with the source, range by range (``cdc-backfill verify``),
    both as of one position while writers run: the DAG's ``capture`` makes the landing pass it.

    Fails when a range differs (``fail_on_difference``), else reports. Collections whose snapshot was
    stopped are not verified (their state is incomplete by request). Returns one report per collection.
    """

    template_fields: Sequence[str] = (
        "collections", "state_dir", "landing_dir", "capture", "enabled", "signal_id", "source_conn_id",
    )  # fmt: skip

    def __init__(
        self,
        *,
        collections: Any,
        state_dir: Any,
        landing_dir: Any = None,
        capture: Any = "drain",
        enabled: Any = True,
        signal_id: Any = None,
        ranges: int = 16,
        master: str = "local[*]",
        fail_on_difference: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("pre_execute", prepare_runtime)
        super().__init__(**kwargs)
        self.collections = collections
        self.state_dir = state_dir
        self.landing_dir = landing_dir
        self.capture = capture
        self.enabled = enabled
        self.signal_id = signal_id
        self.ranges = ranges
        self.master = master
        self.fail_on_difference = fail_on_difference

    def execute(self, context: Context) -> list[dict[str, Any]]:
        if not plans.as_bool(self.enabled):
            raise AirflowSkipException("verify was not asked for")
        hook = self.hook()
        collections = plans.as_list(self.collections)
        signal_id = plans.optional_text(self.signal_id)
        if signal_id:
            stopped = {
                c
                for c in collections
                if plans.collection_outcome(hook.progress_ranges(signal_id, c)).status == RangeStatus.STOPPED
            }
            for c in sorted(stopped):
                self.log.info("%s: snapshot stopped, not verified", c)
            collections = [c for c in collections if c not in stopped]
        if not collections:
            raise AirflowSkipException("nothing to verify: every snapshot was stopped")
        landing = plans.optional_text(self.landing_dir)
        reports = hook.verify(
            lake_path(str(self.state_dir)), collections, self.ranges, self.master,
            landing=lake_path(landing) if landing else None, capture=plans.optional_text(self.capture),
        )  # fmt: skip
        differing, changing = [], []
        for report in reports:
            self.log.info("verify %s: %s", report["collection"], report["verdict"])
            if report.get("not_exact"):
                self.log.warning(
                    "%s: not verified at one position: %s", report["collection"], report["not_exact"]
                )
            if report.get("changing"):
                changing.append(f"{report['collection']}: ranges {report['changing']}")
            if report["differing"]:
                # the CLI's own repair: it sends the signal of these ranges and runs what completes it
                report["repair_command"] = plans.repair_hint(
                    report["collection"], str(self.state_dir), plans.optional_text(self.landing_dir),
                    plans.optional_text(self.source_conn_id), plans.optional_text(self.signal_table),
                )  # fmt: skip
                when = (
                    f"at position {report['position']}" if report.get("position") else "(not at one position)"
                )
                differing.append(
                    f"{report['collection']} {when}: ranges {report['differing']} "
                    f"(repair: {report['repair_command']})"
                )
        if differing and self.fail_on_difference:
            # a retry would find the same: the repair re-snapshots the ranges
            raise AirflowFailException(f"the state differs from the source: {'; '.join(differing)}")
        if changing and self.fail_on_difference:
            raise AirflowFailException(
                f"not verified: {'; '.join(changing)} kept changing while verified, not at one position "
                "(nothing is known to differ): run verify again when writes pause"
            )
        return reports
