"""spark-submit entry point of a checkout: ``cdc_backfill.jobs.capture_kafka``, the job the product submits."""

import sys

from cdc_backfill.jobs.capture_kafka import main

if __name__ == "__main__":
    sys.exit(main())
