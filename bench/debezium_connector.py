"""The connector alone, for ``bench.debezium``'s reference: ``capture debezium --drain --until-snapshot``
as the CLI runs it, each batch read out of the JVM and committed, nothing landed.

    python -m bench.debezium_connector URL LANDING SLOT CHUNK POLL_MS SIGNAL_ID [KEY=VALUE ...]
"""

from __future__ import annotations

import sys

from cdc_backfill.capture.debezium.preflight import start
from cdc_backfill.capture.debezium.settings import DebeziumSettings
from cdc_backfill.lakepath import lake_path
from cdc_backfill.signals.tables import DEFAULT_SIGNAL_TABLE


def main(argv: list[str]) -> None:
    url, landing, slot, chunk, poll_ms, sid, *props = argv
    settings = DebeziumSettings(
        url=url,
        collections=("public.items",),
        signal_table=DEFAULT_SIGNAL_TABLE,
        landing=lake_path(landing),
        slot=slot,
        publication=slot,
        chunk_size=int(chunk),
        poll_ms=int(poll_ms),
        extra=dict(p.split("=", 1) for p in props),
    )
    summary = start(settings, drain=True, until_snapshots=(sid,), lands=False)
    print(f"{summary.records:,} records read and committed, none landed")


if __name__ == "__main__":
    main(sys.argv[1:])
