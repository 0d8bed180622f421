"""``cdc-backfill``: the operator command line. Its modules only parse arguments and print; each command
is a call into the package, the same call Airflow and the demo make."""

from cdc_backfill.cli.main import build_parser, error_line, error_status, main
from cdc_backfill.cli.reconcile import is_summary_line

__all__ = ["build_parser", "error_line", "error_status", "is_summary_line", "main"]
