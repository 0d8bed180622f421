"""spark-submit entry point of a checkout: ``cdc_backfill.jobs.ingest``, the job the product submits."""

import sys

from cdc_backfill.jobs.ingest import main

if __name__ == "__main__":
    sys.exit(main())
