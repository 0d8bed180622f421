"""spark-submit entry point of a checkout: ``cdc_backfill.jobs.reconcile``, the job the product submits."""

import sys

from cdc_backfill.jobs.reconcile import main

if __name__ == "__main__":
    sys.exit(main())
