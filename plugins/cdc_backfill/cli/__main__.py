"""``python -m cdc_backfill.cli``: the same as the ``cdc-backfill`` command."""

import sys

from cdc_backfill.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
